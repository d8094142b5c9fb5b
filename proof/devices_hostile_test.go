package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// A client with a device's token that speaks nonsense is closed with a reason, and the hub keeps serving:
// bytes that are not JSON, a first message that is not a registration, a message past the size bound,
// and an answer for an attempt of another device. A real device then still works.
func TestDeviceHostileClients(t *testing.T) {
	t.Parallel()
	r := newRigT(t)
	r.device("laptop", "", "")
	ctx := context.Background()
	token, err := r.addDevice(ctx, "intruder")
	require.NoError(t, err)
	url := strings.Replace(r.brain.url, "http://", "ws://", 1) + "/devices/connect"
	dial := func() *websocket.Conn {
		t.Helper()
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		require.NoError(t, err)
		c.SetReadLimit(1 << 20)
		return c
	}
	closedWith := func(c *websocket.Conn) websocket.StatusCode {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		for {
			if _, _, err := c.Read(rctx); err != nil {
				return websocket.CloseStatus(err)
			}
		}
	}

	c := dial()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte("\xff\xfe not text")))
	require.Equal(t, websocket.StatusInvalidFramePayloadData, closedWith(c), "a text message that is not UTF-8")

	c = dial()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte("not json {")))
	require.Equal(t, websocket.StatusInvalidFramePayloadData, closedWith(c), "a message that is not JSON")

	c = dial()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"type": "heartbeat"}`)))
	require.Equal(t, websocket.StatusPolicyViolation, closedWith(c))

	c = dial()
	big := `{"type": "register", "tools": ["` + strings.Repeat("x", 17<<20) + `"]}`
	_ = c.Write(ctx, websocket.MessageText, []byte(big))
	require.Equal(t, websocket.StatusMessageTooBig, closedWith(c))

	// Registered, it answers an attempt that is not its own, then sends bytes that are not JSON.
	c = dial()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"type": "register", "tools": []}`)))
	_, msg, err := c.Read(ctx)
	require.NoError(t, err)
	require.Contains(t, string(msg), `"registered"`)
	id, err := r.call(ctx, "lab.effect", map[string]any{"key": "not-yours", "sleep_ms": 5000}, "laptop", 0)
	require.NoError(t, err)
	require.Equal(t, "laptop", r.awaitStarted("not-yours"))
	var attempt int64
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT id FROM core_device_attempts WHERE call_id = $1`, id).Scan(&attempt))
	forged := `{"type": "answer", "answer": {"attempt": ` + strconv.FormatInt(attempt, 10) + `, "status": "succeeded", "result": {"device": "intruder", "hits": 99}}}`
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(forged)))
	// The hub acknowledges what it stored: once the forged answer is acknowledged, it has been through the
	// store, and laptop (still running) has not answered yet.
	ack := `"attempt":` + strconv.FormatInt(attempt, 10)
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, msg, err = c.Read(rctx)
		cancel()
		require.NoError(t, err)
		if strings.Contains(string(msg), `"ack"`) && strings.Contains(strings.ReplaceAll(string(msg), " ", ""), ack) {
			break
		}
	}
	var state string
	require.NoError(t, r.pool.QueryRow(ctx, `SELECT state FROM core_device_attempts WHERE id = $1`, attempt).Scan(&state))
	require.Equal(t, "sent", state, "the forged answer changed nothing")
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"type": `)))
	require.Equal(t, websocket.StatusInvalidFramePayloadData, closedWith(c))

	rc, err := r.receipt(ctx, id, 40*time.Second)
	require.NoError(t, err)
	dev, hits := labResult(t, rc)
	require.Equal(t, "laptop", dev, "the forged answer was not taken")
	require.Equal(t, 1, hits)
	status, err := r.api(ctx, http.MethodGet, "/health", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
}
