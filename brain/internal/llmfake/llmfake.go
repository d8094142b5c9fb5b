// Package llmfake is a fake OpenAI chat-completions server and a fake Anthropic Messages server for tests.
// Both speak the real wire formats (paths, headers, JSON shapes), refuse requests the real services refuse
// (a tool call left without its result, a bad function name, a strict schema that is not strict, a missing
// key), record every request in one provider-neutral form, and answer from a script of turns. A request that
// asks to stream ("stream": true) is answered as the services stream: server-sent events, the text in the
// turn's pieces and each tool call's arguments in pieces (stream.go).
package llmfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Turn is one scripted answer.
type Turn struct {
	// Text is the assistant's text.
	Text string
	// Calls are the tool calls the assistant asks for.
	Calls []Call
	// Check, when set, asserts things about the request this turn answers (with require or assert). It runs
	// on the server's handler goroutine, so its t only records failures; the test fails with them when it
	// ends (from the test's own goroutine, at cleanup).
	Check func(t require.TestingT, req *Request)
	// Fail, when set, answers the request with the provider's error instead of a message.
	Fail *Failure
	// Chunks, when set, is the text (instead of Text) in the pieces a stream sends it in; Text is sent in one.
	Chunks []string
	// Gap is the pause a stream makes before each piece after its first (of text, and of arguments).
	Gap time.Duration
	// CutAfter, when above 0, breaks the stream after that many pieces of text (more than there are: after
	// the text and the calls, before the answer's end): the connection is dropped mid-answer.
	CutAfter int
}

// text is the turn's whole text.
func (t Turn) text() string {
	if t.Chunks != nil {
		return strings.Join(t.Chunks, "")
	}
	return t.Text
}

// pieces is the turn's text as a stream sends it.
func (t Turn) pieces() []string {
	if t.Chunks != nil {
		return t.Chunks
	}
	if t.Text == "" {
		return nil
	}
	return []string{t.Text}
}

// Failure is a scripted error answer, in the provider's error format.
type Failure struct {
	// Status is the HTTP status (400, 429, 500, 529 ...).
	Status int
	// Type is the provider's error type; defaults to one fitting Status.
	Type string
	// Message is the provider's message.
	Message string
	// Header is sent with the answer (Retry-After, retry-after-ms ...).
	Header map[string]string
}

// errorType is f's Type, or the one the providers send with its status.
func (f *Failure) errorType(anthropic bool) string {
	if f.Type != "" {
		return f.Type
	}
	switch {
	case f.Status == http.StatusTooManyRequests && anthropic:
		return "rate_limit_error"
	case f.Status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case f.Status == http.StatusRequestEntityTooLarge && anthropic:
		return "request_too_large"
	case f.Status == 529:
		return "overloaded_error"
	case f.Status >= 500 && anthropic:
		return "api_error"
	case f.Status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// writeHeader sends f's header; the caller then writes the error body.
func (f *Failure) writeHeader(w http.ResponseWriter) {
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
}

// Call is a scripted tool call. Arguments is sent as given (it may be malformed on purpose); for
// Anthropic, whose tool_use input must be an object, malformed arguments cannot be scripted.
type Call struct {
	ID        string
	Name      string
	Arguments string
}

// Request is a recorded request, in a form common to both providers.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// Stream says the request asked to be answered as a stream; IncludeUsage, that the stream count its
	// tokens (OpenAI's stream_options.include_usage; Anthropic's streams always do).
	Stream, IncludeUsage bool
}

// Message is one message of a recorded request.
type Message struct {
	Role       string // user, assistant, tool
	Content    string
	ToolCalls  []Call
	ToolCallID string
	IsError    bool
}

// Tool is an offered function.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any
	Strict      bool
}

// ToolNames lists the offered tools' names.
func (r *Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// ToolResults returns the tool messages answering the previous assistant message's calls, by call id.
func (r *Request) ToolResults() map[string]Message {
	out := map[string]Message{}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m
		}
	}
	return out
}

// Server is a scripted fake.
type Server struct {
	*httptest.Server
	t        testing.TB
	key      string
	mu       sync.Mutex
	script   []Turn
	reqs     []*Request
	problems []string
	// whole: answer whole even a request that asks to stream (a compatible server without streams).
	whole atomic.Bool
}

// AnswerWhole makes the fake answer as a server that cannot stream does: the whole answer, in JSON, to a
// request that asks for a stream too.
func (s *Server) AnswerWhole() { s.whole.Store(true) }

// start serves handler and reports, when the test ends, every problem its handlers recorded.
func (s *Server) start(t testing.TB, handler http.HandlerFunc) {
	s.t = t
	s.Server = httptest.NewServer(handler)
	t.Cleanup(func() {
		s.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.problems {
			t.Error(p)
		}
	})
}

// problem records a failure seen on a handler goroutine, reported when the test ends.
func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// recorder is the t a Check gets: it records failures, and FailNow stops the Check (not the handler).
type recorder struct {
	s    *Server
	turn int
}

// errFailNow stops a Check that called FailNow; next recovers it.
var errFailNow = errors.New("llmfake: check failed")

func (r *recorder) Errorf(format string, args ...any) {
	r.s.problem("turn %d check: "+format, append([]any{r.turn}, args...)...)
}

func (r *recorder) FailNow() { panic(errFailNow) }

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Remaining is the number of scripted turns not yet used.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

func (s *Server) next(req *Request) (Turn, bool) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	if len(s.script) == 0 {
		s.mu.Unlock()
		return Turn{}, false
	}
	turn := s.script[0]
	s.script = s.script[1:]
	n := len(s.reqs)
	s.mu.Unlock()
	if turn.Check != nil {
		func() {
			defer func() {
				if p := recover(); p != nil && p != errFailNow {
					panic(p)
				}
			}()
			turn.Check(&recorder{s: s, turn: n}, req)
		}()
	}
	return turn, true
}

var functionNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkTools applies the providers' rules on offered tools.
func checkTools(tools []Tool) error {
	seen := map[string]bool{}
	for _, t := range tools {
		if !functionNameRe.MatchString(t.Name) {
			return fmt.Errorf("tools: %q does not match ^[a-zA-Z0-9_-]{1,64}$", t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("tools: duplicate name %q", t.Name)
		}
		seen[t.Name] = true
		if t.Strict {
			if err := checkStrict(t.Name, "", t.Parameters); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkStrict applies OpenAI's structured-output rules to a strict function's parameters: every object has
// additionalProperties false and lists every property in required.
func checkStrict(fn, path string, node any) error {
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	props, hasProps := m["properties"].(map[string]any)
	if hasProps || m["type"] == "object" {
		if m["additionalProperties"] != false {
			return fmt.Errorf("Invalid schema for function '%s': In context=%s, 'additionalProperties' is required to be supplied and to be false", fn, path)
		}
		var required []string
		if r, ok := m["required"].([]any); ok {
			for _, v := range r {
				required = append(required, fmt.Sprint(v))
			}
		}
		for name := range props {
			if !slices.Contains(required, name) {
				return fmt.Errorf("Invalid schema for function '%s': In context=%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", fn, path, name)
			}
		}
		for name, p := range props {
			if err := checkStrict(fn, path+"/properties/"+name, p); err != nil {
				return err
			}
		}
	}
	if items, ok := m["items"]; ok {
		return checkStrict(fn, path+"/items", items)
	}
	return nil
}

// checkToolResults applies both providers' rule: every tool call of an assistant message is answered by a
// tool result right after it, before anything else.
func checkToolResults(msgs []Message) error {
	for i, m := range msgs {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for j := i + 1; j < len(msgs) && msgs[j].Role == "tool"; j++ {
			answered[msgs[j].ToolCallID] = true
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				return fmt.Errorf("messages.%d: tool call %s has no tool result after it", i, c.ID)
			}
		}
	}
	for i, m := range msgs {
		if m.Role != "tool" {
			continue
		}
		found := false
		for j := i - 1; j >= 0 && !found; j-- {
			if msgs[j].Role == "assistant" {
				for _, c := range msgs[j].ToolCalls {
					found = found || c.ID == m.ToolCallID
				}
				break
			}
		}
		if !found {
			return fmt.Errorf("messages.%d: tool result for %s answers no tool call", i, m.ToolCallID)
		}
	}
	return nil
}

func readJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	return nil
}

// textOf reads content that is either a string or an array of {"type": "text", "text": ...} parts.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Type == "text" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "")
}
