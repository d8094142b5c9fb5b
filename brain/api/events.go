package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// A run's events as server-sent events (docs/durable-runs.md#async-and-live): read from brain_run_events, so
// any brain serves them and a stream goes on across a brain's restart (the client reconnects with
// Last-Event-ID); woken by the notification gem_run_event.

const (
	// eventsPage is how many events one read takes.
	eventsPage = 500
	// eventsKeepAlive is how often an idle stream sends a comment, so proxies keep it open.
	eventsKeepAlive = 15 * time.Second
	// eventsRecheck is how often a stream authenticates its caller again (a token revoked, a studio session
	// ended) and reads its run without a notification: a notification lost with a connection, and a rules
	// run whose brain died before writing its answer (the read derives it).
	eventsRecheck = 2 * time.Second
)

// getRunEvents answers GET /brain/runs/{id}/events: the run's events from after Last-Event-ID (or
// ?after=), ending after run_ended. Who may read the run may read its events; to anyone else it does not
// exist (404), as GET /brain/runs/{id}. A run that has ended with nothing after Last-Event-ID is answered 204
// No Content, which tells a client (a browser's EventSource too) that nothing more will come.
func (s *Server) getRunEvents(c echo.Context) error {
	id, err := parseID(c, "run")
	if err != nil {
		return err
	}
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	page, err := postgres.RunEventsRead(c.Request().Context(), s.pool, id, after, eventsPage)
	if err != nil {
		return err
	}
	if !principalOf(c).reader().MayReadRun(page.RequestedBy, page.ApprovedBy, page.Status) {
		return brain.Errorf(brain.ENOTFOUND, "no run %s", id)
	}
	if page.Ended() && len(page.Events) == 0 {
		return c.NoContent(http.StatusNoContent)
	}
	startEventStream(c)
	_, err = s.streamRunEvents(c, id, after, page)
	return err
}

// lastEventID is where a stream resumes: the Last-Event-ID header, or ?after= (0: from the start).
func lastEventID(c echo.Context) (int64, error) {
	v := c.Request().Header.Get("Last-Event-ID")
	if v == "" {
		v = c.QueryParam("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32) // a seq is an integer column
	if err != nil || n < 0 {
		return 0, brain.Errorf(brain.EINVALID, "Last-Event-ID (or after) must be an event's id, a whole number, not %q", v)
	}
	return n, nil
}

// startEventStream sends a stream's header at once: the client knows it is answered before the first event.
func startEventStream(c echo.Context) {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	w.Flush()
}

// streamRunEvents writes a run's events after seq `after` as they are recorded (from page first, when the
// caller has read it), until the run has ended (ended true: its run_ended written, or nothing after `after`),
// the client leaves, the server closes, or the caller may no longer read the run — its token revoked, its
// studio session ended, its grant taken back, or the run no longer one it may read (an approver's view of a
// plan another approved): each read of events is checked against the run as read with them, and the caller
// is authenticated again every eventsRecheck. Errors after the header are logged: the client sees the stream
// end, and resumes with Last-Event-ID.
func (s *Server) streamRunEvents(c echo.Context, id uuid.UUID, after int64, page *postgres.RunEventsPage) (ended bool, _ error) {
	ctx := c.Request().Context()
	w := c.Response()
	var wake, end <-chan struct{} // without a listener (a server built without one), the recheck reads
	if s.runEvents != nil {
		var stop, stopEnd func()
		wake, stop = s.runEvents.Watch(postgres.RunEventChannel, id.String())
		defer stop()
		// A run's end (its receipts, answer and run_ended) notifies gem_run alone.
		end, stopEnd = s.runEvents.Watch(postgres.RunEndedChannel, id.String())
		defer stopEnd()
		// Its other events notify only while the database knows the run is watched. Registered before the
		// first read below (or the re-read after a page read before it, prewatch): an event committed before
		// it is read then, one after it notifies. Without it (the database away), the stream reads on its
		// recheck.
		who := uuid.NewString()
		if err := postgres.RunWatch(ctx, s.pool, id, who); err != nil {
			if ctx.Err() == nil {
				zerolog.Ctx(ctx).Warn().Err(err).Str("run_id", id.String()).Msg("error watching a run's events")
			}
		} else {
			defer func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := postgres.RunUnwatch(ctx, s.pool, id, who); err != nil {
					zerolog.Ctx(ctx).Warn().Err(err).Str("run_id", id.String()).Msg("error ending a watch of a run's events")
				}
			}()
		}
	}
	keepAlive := time.NewTicker(eventsKeepAlive)
	defer keepAlive.Stop()
	recheck := time.NewTicker(eventsRecheck)
	defer recheck.Stop()
	log := zerolog.Ctx(ctx)
	reader := principalOf(c).reader()
	prewatch := page != nil // read before the watch began: an event added meanwhile woke nobody
	for {
		if page == nil {
			var err error
			if page, err = postgres.RunEventsRead(ctx, s.pool, id, after, eventsPage); err != nil {
				if ctx.Err() == nil && brain.ErrorCode(err) != brain.ENOTFOUND { // not found: dropped by retention
					log.Warn().Err(err).Str("run_id", id.String()).Msg("error reading a run's events")
				}
				return false, nil
			}
			if !reader.MayReadRun(page.RequestedBy, page.ApprovedBy, page.Status) {
				return false, nil
			}
		}
		for _, e := range page.Events {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, e.Data); err != nil {
				return false, nil
			}
			after = e.Seq
			if e.Kind == postgres.EventRunEnded {
				w.Flush()
				return true, nil
			}
		}
		w.Flush()
		full, mode, status := len(page.Events) == eventsPage, page.Mode, page.Status
		if !full && page.Ended() {
			return true, nil // its run_ended was before `after`: nothing more comes
		}
		page = nil
		if full || prewatch {
			prewatch = false
			continue
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-s.closing:
			return false, nil
		case <-wake:
		case <-end:
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return false, nil
			}
			w.Flush()
		case <-recheck.C:
			p, err := s.requestPrincipal(c)
			if err != nil {
				return false, nil
			}
			reader = p.reader()
			if mode != brain.ModeChat && (status == brain.RunEnqueued || status == brain.RunWaiting) {
				// A rules run's answer is derived from its receipts by whoever reads it: this read records it
				// when every receipt has come, and run_ended with it.
				if _, err := s.runs.GetRun(ctx, id, brain.Reader{All: true}); err == nil {
					s.runs.Recorded(ctx, id)
				}
			}
		}
	}
}

// writeEvent sends one event without an id (the end of a chat's stream: its response).
func writeEvent(c echo.Context, kind string, data []byte) {
	w := c.Response()
	_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, data)
	w.Flush()
}

// wantsAsync says whether a request asks to be answered at once (202): "async": true in its body, or
// Prefer: respond-async (RFC 7240).
func wantsAsync(c echo.Context, body bool) bool {
	return body || headerHas(c, "Prefer", "respond-async", nil)
}

// wantsStream says whether a request asks for its run's events as they come: Accept names
// text/event-stream, other than with q=0 (RFC 9110: "not acceptable").
func wantsStream(c echo.Context) bool {
	return headerHas(c, echo.HeaderAccept, "text/event-stream", func(params string) bool {
		for _, p := range strings.Split(params, ";") {
			if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); strings.EqualFold(k, "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				return err != nil || q > 0
			}
		}
		return true
	})
}

// headerHas says whether a comma-separated header lists token with parameters (after ";") that ok accepts
// (nil: any).
func headerHas(c echo.Context, name, token string, ok func(params string) bool) bool {
	for _, v := range c.Request().Header.Values(name) {
		for _, p := range strings.Split(v, ",") {
			value, params, _ := strings.Cut(p, ";")
			if strings.EqualFold(strings.TrimSpace(value), token) && (ok == nil || ok(params)) {
				return true
			}
		}
	}
	return false
}

// accepted answers an async request: 202, the run (and the chat's session), where to read it and its events.
func accepted(c echo.Context, id uuid.UUID, sessionID string, repeated bool) error {
	loc := "/brain/runs/" + id.String()
	c.Response().Header().Set(echo.HeaderLocation, loc)
	body := map[string]any{"run_id": id, "location": loc, "events": loc + "/events"}
	if sessionID != "" {
		body["session_id"] = sessionID
	}
	if repeated {
		body["repeated"] = true
	}
	return ok(c, http.StatusAccepted, body)
}

// detached is work that goes on after its request is answered: its result when it ends.
type detached[T any] struct {
	begun chan uuid.UUID
	done  chan detachedResult[T]
}

type detachedResult[T any] struct {
	value T
	err   error
}

// detach starts work in its own goroutine, giving it the callback that says its run is recorded. ctx is the
// work's: a request's own, when the work detaches itself from its client where it must (a chat turn does,
// once begun), or one without its end.
func detach[T any](ctx context.Context, work func(ctx context.Context, begun func(uuid.UUID)) (T, error)) *detached[T] {
	d := &detached[T]{begun: make(chan uuid.UUID, 1), done: make(chan detachedResult[T], 1)}
	go func() {
		var v T
		err := gemlog.Guarded(zerolog.Ctx(ctx), "an async request", func() error {
			var err error
			v, err = work(ctx, func(id uuid.UUID) {
				select {
				case d.begun <- id:
				default:
				}
			})
			return err
		})
		d.done <- detachedResult[T]{v, err}
	}()
	return d
}

// acceptedChat answers an async chat request 202 with its turn's run and session (read from the run when
// the request did not name one: a repeat, or a new session).
func (s *Server) acceptedChat(c echo.Context, id uuid.UUID, sessionID string, repeated bool) error {
	if sessionID == "" {
		if rec, err := postgres.RunGet(c.Request().Context(), s.pool, id, false); err == nil {
			sessionID = rec.ConversationID
		}
	}
	return accepted(c, id, sessionID, repeated)
}

// chatLive answers a chat turn at once (202 with its run) or, with stream, as the stream of its run's events
// as they are recorded, ending with the turn's response (event: response, final of it). A request refused
// before its turn began (the session busy, no such agent, no LLM) is answered by respond, as without either.
// The turn goes on when the client leaves: it is the run's. The stream names its run before any event
// (Content-Location: its events' URL), so a client that loses it can read the rest there; a retry with the
// request's key and Last-Event-ID streams the same turn from after that event.
func (s *Server) chatLive(c echo.Context, slug string, params *brain.ChatParams, stream bool,
	respond func(*brain.ChatResponse, error) error, final func(*brain.ChatResponse) any) error {
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	caller := requester(c)
	d := detach(c.Request().Context(), func(ctx context.Context, begun func(uuid.UUID)) (*brain.ChatResponse, error) {
		params.OnBegun = begun
		return s.chat.Chat(ctx, slug, params, caller)
	})
	var id uuid.UUID
	select {
	case id = <-d.begun:
	case res := <-d.done:
		return respond(res.value, res.err)
	}
	if !stream {
		return s.acceptedChat(c, id, params.SessionID, false)
	}
	c.Response().Header().Set("Content-Location", "/brain/runs/"+id.String()+"/events")
	startEventStream(c)
	if ended, _ := s.streamRunEvents(c, id, after, nil); !ended {
		return nil
	}
	select {
	case res := <-d.done:
		var data []byte
		if res.value != nil {
			data, _ = json.Marshal(final(res.value))
		} else {
			data, _ = json.Marshal(map[string]any{"ok": false, "errors": []*brain.Error{brain.AsError(res.err)}})
		}
		writeEvent(c, "response", data)
	case <-c.Request().Context().Done():
	case <-s.closing:
	}
	return nil
}
