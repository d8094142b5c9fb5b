package devicehub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestSessionPanicEndsOnlyTheSession: a panic in a device session's work (a deliberate fault) is logged with
// the device's name and the stack, and ends that session with an internal error (1011) the device sees, as
// a lost connection would; the process, and the hub's other sockets, live on (the session's goroutines had
// no recovery, so a panic ended the brain).
func TestSessionPanicEndsOnlyTheSession(t *testing.T) {
	t.Parallel()
	var logs sqltest.SyncBuffer
	log := zerolog.New(&logs)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		s := &session{name: r.URL.Query().Get("device"), ws: ws, log: log.With().Str("device", r.URL.Query().Get("device")).Logger()}
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.guarded(func() {
			if s.name == "faulty" {
				panic("a deliberate fault")
			}
			for { // a healthy session reads its device until it closes
				if _, _, err := ws.Read(s.ctx); err != nil {
					return
				}
			}
		})
	}))
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(device string) *websocket.Conn {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(web.URL, "http")+"?device="+device, nil)
		require.NoError(t, err)
		return ws
	}
	healthy := dial("healthy")
	defer healthy.CloseNow()
	faulty := dial("faulty")
	defer faulty.CloseNow()

	_, _, err := faulty.Read(ctx)
	require.Equal(t, websocket.StatusInternalError, websocket.CloseStatus(err), "%v", err)
	require.Contains(t, logs.String(), `"device":"faulty"`)
	require.Contains(t, logs.String(), "a deliberate fault")
	require.Contains(t, logs.String(), "recover_test.go", "the stack")

	// The other session is untouched: it ends only when its device closes.
	require.NoError(t, healthy.Write(ctx, websocket.MessageText, []byte(`{}`)))
	require.NoError(t, healthy.Close(websocket.StatusNormalClosure, "done"))
}
