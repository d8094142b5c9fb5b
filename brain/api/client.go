package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemhq/gem/brain"
)

// Client talks to a brain over HTTP (the CLI uses it).
type Client struct {
	// BaseURL is the brain's URL, like http://127.0.0.1:8088.
	BaseURL string
	// Token is the bearer token.
	Token string
	// HTTP is the HTTP client. Defaults to one without a timeout (give requests a context deadline).
	HTTP *http.Client
}

// Run posts a run request. It returns the response (also for ok=false answers and HTTP errors, which come
// back as a response with Errors) and the HTTP status. A request with a key is sent again as DoKeyed says.
func (c *Client) Run(ctx context.Context, req *brain.RunParams) (*brain.RunResponse, int, error) {
	var resp brain.RunResponse
	status, err := c.DoKeyed(ctx, http.MethodPost, "/brain/run", req, req.IdempotencyKey != "", &resp)
	return &resp, status, err
}

// Unreachable says err is a request that reached no one: the connection refused, the host unreachable, its
// name not found. Nothing was done; a command that meets it before any brain answered says so at once (a
// brain that is not running is not one restarting).
func Unreachable(err error) bool {
	var dnsErr *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.As(err, &dnsErr)
}

// DoKeyed is Do for a request that does work. When it has a key (keyed: its Idempotency-Key is in body), it
// is sent again while no brain can answer it for a moment — the connection broken, 502, 503 or 504 (the
// database away, a brain overloaded or restarting), or refused once a brain has answered — until ctx ends:
// the key makes every try the same request, so work a try did before its answer was lost is answered, not
// done again. Without a key it is sent once; nor is it when its first try reached no one (Unreachable).
func (c *Client) DoKeyed(ctx context.Context, method, path string, body any, keyed bool, out any) (int, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	reached := false // a brain has answered a try
	for attempt := 0; ; attempt++ {
		var raw json.RawMessage
		status, err := c.do(ctx, method, path, data, &raw)
		reached = reached || status != 0
		retry := keyed && ctx.Err() == nil && (status == 0 && err != nil && (reached || !Unreachable(err)) || status != 0 && passing(status, raw))
		if !retry {
			if err == nil {
				err = json.Unmarshal(raw, out)
			}
			return status, err
		}
		cause := err
		if cause == nil {
			cause = fmt.Errorf("the brain answered %d: %.300s", status, raw)
		}
		if err := pause(ctx, attempt, method+" "+path, cause); err != nil {
			if status != 0 {
				return status, json.Unmarshal(raw, out) // the last answer, as it was
			}
			return 0, err
		}
	}
}

// GetRun fetches a run.
func (c *Client) GetRun(ctx context.Context, id string) (*brain.RunResponse, int, error) {
	var resp brain.RunResponse
	status, err := c.do(ctx, http.MethodGet, "/brain/runs/"+id, nil, &resp)
	return &resp, status, err
}

// Approve approves a planned run.
func (c *Client) Approve(ctx context.Context, id string, wait bool, timeout time.Duration) (*brain.RunResponse, int, error) {
	body, _ := json.Marshal(map[string]any{"wait": wait, "wait_timeout_ms": timeout.Milliseconds()})
	var resp brain.RunResponse
	status, err := c.do(ctx, http.MethodPost, "/brain/runs/"+id+"/approve", body, &resp)
	return &resp, status, err
}

// Do sends a request with a JSON body (nil for none) and decodes the JSON answer into out; it returns the
// HTTP status.
func (c *Client) Do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	return c.do(ctx, method, path, data, out)
}

// send sends a request with a JSON body (nil for none) and the bearer token.
func (c *Client) send(ctx context.Context, method, path string, body []byte, header map[string]string) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return hc.Do(req)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	resp, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return 0, fmt.Errorf("error calling the brain at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("error reading the brain's answer: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("the brain answered %d with something that is not JSON: %.200s", resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}

// Event is one server-sent event of a run (GET /brain/runs/{id}/events), or the last of a chat's stream
// (Kind "response", ID 0).
type Event struct {
	ID   int64
	Kind string
	Data json.RawMessage
}

// ReadEvents reads server-sent events from r, calling fn for each, until r ends or fn errs.
func ReadEvents(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev Event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if ev.Kind != "" || len(data) > 0 {
				ev.Data = json.RawMessage(strings.Join(data, "\n"))
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = Event{}, nil
		case field == "": // a comment (keep-alive)
		case field == "id":
			ev.ID, _ = strconv.ParseInt(value, 10, 64)
		case field == "event":
			ev.Kind = value
		case field == "data":
			data = append(data, value)
		}
	}
	return sc.Err()
}

// errStreamEnded says a stream ended before its run did.
var errStreamEnded = errors.New("the event stream ended before the run")

// streamRetryMax is the longest a client waits before opening a broken stream again.
const streamRetryMax = 2 * time.Second

// passing says whether an answer is that of a brain (or the proxy before it) unable to answer for a moment:
// 502 or 504, or a 503 for the database away or the brain overloaded — not for a brain without an LLM, which
// will not have one a moment later. A stream is opened again after it.
func passing(status int, body json.RawMessage) bool {
	switch status {
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	case http.StatusServiceUnavailable:
		var e struct {
			Errors []struct {
				Code string `json:"code"`
			} `json:"errors"`
		}
		return json.Unmarshal(body, &e) != nil || len(e.Errors) == 0 || e.Errors[0].Code != brain.ENOLLM
	}
	return false
}

// pause waits before the attempt-th reopening of a stream (from 0): 250 ms, doubling up to streamRetryMax.
func pause(ctx context.Context, attempt int, what string, cause error) error {
	d := min(250*time.Millisecond<<min(attempt, 4), streamRetryMax)
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s: %w (%v)", what, ctx.Err(), cause)
	case <-time.After(d):
		return nil
	}
}

// FollowRun calls fn with each event of a run after seq after, until run_ended. A stream that breaks (its
// brain restarted) or that a brain cannot serve for a moment (502, 503, 504: the database away, a brain
// overloaded) is opened again from the last event seen, until ctx ends: any brain serves it. A run that has
// ended with nothing after `after` (204) ends it too.
func (c *Client) FollowRun(ctx context.Context, id string, after int64, fn func(Event) error) error {
	for attempt := 0; ; attempt++ {
		var stop error // fn's error, or io.EOF at run_ended
		var refused json.RawMessage
		status, err := c.stream(ctx, http.MethodGet, "/brain/runs/"+id+"/events", nil, after, func(e Event) error {
			if e.Kind == "json" {
				refused = e.Data // an error's body: the status says it
				return nil
			}
			after, attempt = e.ID, 0
			if stop = fn(e); stop == nil && e.Kind == "run_ended" {
				stop = io.EOF
			}
			return stop
		})
		switch {
		case errors.Is(stop, io.EOF), status == http.StatusNoContent:
			return nil
		case stop != nil:
			return stop
		case status >= 400 && !passing(status, refused):
			return err
		}
		// The stream broke (its brain went away) or was refused for a moment: again, from the last event seen.
		if err := pause(ctx, attempt, "following run "+id, err); err != nil {
			return err
		}
	}
}

// ChatStream posts a chat message asking for its events (Accept: text/event-stream) and calls fn with each,
// the last being the turn's response (Kind "response"). A request refused before its turn began is answered
// in JSON: its status and body come back instead (status >= 400, body not nil). A request with a key is
// sent again when its stream breaks before the response (its brain went away) or a brain cannot answer it
// for a moment (502, 503, 504), with Last-Event-ID, until ctx ends: the key makes it the same turn, and the
// stream goes on from the last event seen.
func (c *Client) ChatStream(ctx context.Context, slug string, req *brain.ChatParams, fn func(Event) error) (status int, body json.RawMessage, err error) {
	data, err := json.Marshal(req)
	if err != nil {
		return 0, nil, err
	}
	var after int64
	reached := false // a brain has answered a try
	for attempt := 0; ; attempt++ {
		var refused json.RawMessage
		var fnErr error
		answered := false
		status, err = c.stream(ctx, http.MethodPost, "/agents/"+url.PathEscape(slug)+"/chat", data, after, func(e Event) error {
			switch {
			case e.Kind == "json":
				refused = e.Data
				return nil
			case e.Kind == "response":
				answered = true
			case e.ID > 0:
				after, attempt = e.ID, 0
			}
			fnErr = fn(e)
			return fnErr
		})
		switch {
		case fnErr != nil:
			return status, nil, fnErr
		case answered:
			return status, nil, nil
		case refused != nil && !passing(status, refused):
			if errors.Is(err, errStreamEnded) {
				err = nil
			}
			return status, refused, err
		case req.IdempotencyKey == "":
			return status, refused, err // not safe to send again
		case status == 0 && !reached && Unreachable(err):
			return status, refused, err // no brain runs there: say so, do not wait for one
		}
		reached = reached || status != 0
		if err := pause(ctx, attempt, "chatting with "+slug, err); err != nil {
			return status, refused, err
		}
	}
}

// stream sends a request for server-sent events and reads them; a JSON answer (an error) comes to fn as one
// event of Kind "json". It returns errStreamEnded when the stream ends without fn ending it.
func (c *Client) stream(ctx context.Context, method, path string, body []byte, after int64, fn func(Event) error) (int, error) {
	header := map[string]string{"Accept": "text/event-stream"}
	if after > 0 {
		header["Last-Event-ID"] = strconv.FormatInt(after, 10)
	}
	resp, err := c.send(ctx, method, path, body, header)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err := fn(Event{Kind: "json", Data: data}); err != nil {
			return resp.StatusCode, err
		}
		if resp.StatusCode >= 400 {
			return resp.StatusCode, fmt.Errorf("the brain answered %d: %.300s", resp.StatusCode, data)
		}
		return resp.StatusCode, errStreamEnded
	}
	if err := ReadEvents(resp.Body, fn); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, errStreamEnded
}
