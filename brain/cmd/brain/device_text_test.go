package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/devicehub"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/stretchr/testify/require"
)

// TestDeviceRegistrationRefusesNUL: a device registering contracts that hold a NUL (\u0000 in a description or
// a property's) is refused over its WebSocket with the problems named, tool and field, as any
// refused registration is (closed 4000: fix the tools), not told to try again while storing them fails.
func TestDeviceRegistrationRefusesNUL(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	name := uniq("nul")
	var made struct {
		Token string `json:"token"`
	}
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/devices", map[string]any{"name": name, "permissions": []string{"read:*"}}, &made))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+api.DeviceConnectPath,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + made.Token}}})
	require.NoError(t, err)
	defer ws.CloseNow()

	inDescription := strings.Replace(deviceTool, `"Echoes a key, through the test's device."`, `"Echoes a key\u0000"`, 1)
	inProperty := strings.NewReplacer(`lab.shared_state_echo`, `lab.nul_echo`,
		`{"key": {"type": "string"}}`, `{"key": {"type": "string", "description": "a\u0000b"}}`).Replace(deviceTool)
	require.NoError(t, wsjson.Write(ctx, ws, &registry.DeviceMessage{Type: registry.DeviceMsgRegister,
		Tools: []json.RawMessage{json.RawMessage(inDescription), json.RawMessage(inProperty)}}))
	var registered registry.DeviceMessage
	require.NoError(t, wsjson.Read(ctx, ws, &registered))
	require.Equal(t, registry.DeviceMsgRegistered, registered.Type)
	require.Len(t, registered.Problems, 2, "%+v", registered.Problems)
	require.Equal(t, "lab.shared_state_echo", registered.Problems[0].Tool)
	require.Equal(t, "description", registered.Problems[0].Field)
	require.Contains(t, registered.Problems[0].Message, `contains a NUL character (\u0000)`)
	require.Equal(t, "lab.nul_echo", registered.Problems[1].Tool)
	require.Equal(t, "input_schema.properties.key.description", registered.Problems[1].Field)
	require.Contains(t, registered.Problems[1].Message, `contains a NUL character (\u0000)`)

	_, _, err = ws.Read(ctx)
	require.Equal(t, devicehub.CloseRefused, websocket.CloseStatus(err), "%v", err)
	d, err := gemsql.DeviceGet(ctx, shared.pool, name)
	require.NoError(t, err)
	require.Empty(t, d.Tools)
}
