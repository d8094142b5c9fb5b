package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// The calls page is live: GET /studio/calls/events is a server-sent event stream of the calls whose
// receipts are written, fed by the receipt notifications the brain already listens to (one LISTEN
// connection for every viewer; each carries a call id), filtered as the page is and by what the viewer
// may read.

const (
	// studioEventBuffer is how many receipts a viewer may fall behind before it is told to reload.
	studioEventBuffer = 512
	// studioKeepAlive is how often an idle stream sends a comment, so proxies keep it open.
	studioKeepAlive = 15 * time.Second
	// studioRecheck is how often a stream checks that its login still holds (logout, expiry, revocation).
	studioRecheck = 30 * time.Second
)

// studioCallEvent is one call as the live list shows it.
type studioCallEvent struct {
	ID          string  `json:"id"`
	Tool        string  `json:"tool"`
	Status      string  `json:"status"`
	RequestedBy string  `json:"requested_by"`
	Agent       string  `json:"agent"`
	Device      string  `json:"device"`
	ErrorCode   string  `json:"error_code"`
	CreatedAt   string  `json:"created_at"`
	DurationMS  float64 `json:"duration_ms"`
}

func callEvent(call *gemsql.Call) studioCallEvent {
	ev := studioCallEvent{ID: call.ID.String(), Tool: call.ToolName, Status: string(call.Status), RequestedBy: call.RequestedBy,
		Agent: call.Agent, Device: call.RanOnDevice, ErrorCode: call.ErrorCode, CreatedAt: call.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if ev.Device == "" {
		ev.Device = call.Device
	}
	if call.FinishedAt != nil {
		ev.DurationMS = float64(call.FinishedAt.Sub(call.CreatedAt).Microseconds()) / 1000
	}
	return ev
}

func (s *Server) studioCallEvents(c echo.Context) error {
	f, err := parseCallFilter(c)
	if err != nil {
		return err
	}
	if s.waiter == nil {
		return errors.New("no receipt waiter")
	}
	w := c.Response()
	startEventStream(c)
	watch := s.waiter.Watch(studioEventBuffer)
	defer watch.Close()
	send := func(event, data string) error {
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return err
		}
		w.Flush()
		return nil
	}
	if err := send("ready", `{}`); err != nil {
		return nil
	}
	ctx := c.Request().Context()
	log := zerolog.Ctx(ctx)
	reader := principalOf(c).reader()
	keepAlive := time.NewTicker(studioKeepAlive)
	defer keepAlive.Stop()
	recheck := time.NewTicker(studioRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-recheck.C:
			if sess := studioSessionOf(c); sess != nil {
				if _, err := postgres.StudioSessionGet(ctx, s.pool, sess.id); err != nil {
					_ = send("logout", `{}`)
					return nil
				}
			}
		case id := <-watch.C():
			if watch.Lagged() {
				if send("lagged", `{}`) != nil {
					return nil
				}
			}
			// The id is a wake-up (any database login may NOTIFY one): the call, if there is one, is read
			// here and shown only to a viewer who may read it.
			call, err := gemsql.CallGet(ctx, s.pool, id)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, gemsql.ErrNotFound) {
					continue
				}
				log.Warn().Err(err).Str("call_id", id.String()).Msg("studio: error reading a call for the live list")
				continue
			}
			if !f.matches(call) || !reader.MayReadCall(call.RequestedBy, call.ApprovedBy, false) {
				continue
			}
			data, _ := json.Marshal(callEvent(call))
			if send("call", string(data)) != nil {
				return nil
			}
		}
	}
}

// studioFuncs are the templates' helpers. None returns template.HTML from data: everything a user or a
// tool wrote is printed escaped.
var studioFuncs = template.FuncMap{
	"json": func(v any) string {
		switch v := v.(type) {
		case json.RawMessage:
			return prettyJSON(v)
		case []byte:
			return prettyJSON(v)
		}
		return indentJSON(v)
	},
	"when": func(v any) string {
		switch t := v.(type) {
		case time.Time:
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05.000")
		case *time.Time:
			if t == nil {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05.000")
		}
		return ""
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"ms": func(from time.Time, to *time.Time) string {
		if to == nil {
			return ""
		}
		return fmt.Sprintf("%.1f ms", float64(to.Sub(from).Microseconds())/1000)
	},
	"statusClass": func(v any) string {
		st := fmt.Sprint(v)
		switch st {
		case "succeeded", "completed", "real", "approved":
			return "st st-ok"
		case "failed", "timeout", "rejected", "expired", "no_handler", "outcome_unknown":
			return "st st-bad"
		case "not_configured", "awaiting_approval", "planned":
			return "st st-warn"
		}
		return "st"
	},
	"join":  strings.Join,
	"short": shortID,
	"mode": func(t *registry.Tool) string {
		m := string(t.Idempotency.Mode)
		if t.Idempotency.KeyField != "" {
			m += " (" + t.Idempotency.KeyField + ")"
		}
		return m
	},
	"lines":   func(v []string) string { return strings.Join(v, "\n") },
	"add":     func(a, b int) int { return a + b },
	"percent": func(share float64) string { return fmt.Sprintf("%.0f%%", share*100) },
	"deref": func(p any) any {
		switch v := p.(type) {
		case *string:
			if v == nil {
				return ""
			}
			return *v
		case *float64:
			if v == nil {
				return ""
			}
			return *v
		case *int:
			if v == nil {
				return ""
			}
			return *v
		}
		return p
	},
}

// shortIDLen is how many of an id's last characters the studio shows.
const shortIDLen = 8

// shortID is a call's id as the pages show it: its last 8 characters. A UUIDv7 starts with its time, so its
// first 8 are the same for every call of a minute; its last 8 are random, and a search for them finds it.
func shortID(id string) string { return id[max(0, len(id)-shortIDLen):] }
