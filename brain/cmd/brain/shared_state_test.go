package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// toolNamesOf is GET /brain/tools (with a query string), by name, requiring 200.
func toolNamesOf(t *testing.T, a *testAPI, query string) []string {
	t.Helper()
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/tools"+query, nil, &out))
	names := make([]string, len(out.Tools))
	for i, tool := range out.Tools {
		names[i] = tool.Name
	}
	return names
}

// deviceTool is the contract the test's device serves.
const deviceTool = `{"name": "lab.shared_state_echo", "description": "Echoes a key, through the test's device.",
	"input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"], "additionalProperties": false},
	"output_schema": {"type": "object"}, "permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 5000}`

// TestReadsChangeNothing: searching the studio's registry page (which filtered the registry's own slice in
// place) changes nothing another request sees: afterwards /brain/tools, /brain/help, tool search and the
// registry page list every tool, and a device that registers joins the catalog (the next registration
// crashed the brain in Registry.SetDeviceTools).
func TestReadsChangeNothing(t *testing.T) {
	t.Parallel()
	a, _ := privateBrain(t, false)
	all := toolNamesOf(t, a, "")
	require.Greater(t, len(all), 50)
	require.True(t, slices.IsSorted(all))

	s := newStudioClient(t, a.url)
	s.login(testToken)
	for _, q := range []string{"invoice", "lead", "nothing-matches-this", ""} {
		status, page := s.get("/studio/registry?q=" + q)
		require.Equal(t, http.StatusOK, status, "q=%s: %s", q, page)
	}

	require.Equal(t, all, toolNamesOf(t, a, ""), "every tool, in order, after the searches")
	require.NotEmpty(t, toolNamesOf(t, a, "?q=invoice"))
	var help map[string]any
	require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/brain/help", nil, &help))
	status, page := s.get("/studio/registry")
	require.Equal(t, http.StatusOK, status)
	for _, name := range all {
		require.Contains(t, page, ">"+name+"<", "the registry page lists %s", name)
	}

	// A device registers: its tool joins the catalog beside every registry tool.
	a.brain.Devices.TestSignals.CatalogChanged.Init(t)
	var made struct {
		Token string `json:"token"`
	}
	require.Equal(t, http.StatusCreated, a.do(http.MethodPost, "/devices", map[string]any{"name": "shared-state", "permissions": []string{"read:*"}}, &made))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(a.url, "http")+api.DeviceConnectPath,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + made.Token}}})
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, wsjson.Write(ctx, ws, &registry.DeviceMessage{Type: registry.DeviceMsgRegister, Tools: []json.RawMessage{json.RawMessage(deviceTool)}}))
	var registered registry.DeviceMessage
	require.NoError(t, wsjson.Read(ctx, ws, &registered))
	require.Equal(t, registry.DeviceMsgRegistered, registered.Type)
	require.Empty(t, registered.Problems)
	require.Len(t, a.brain.Devices.TestSignals.CatalogChanged.Wait().Added, 1)
	want := append(slices.Clone(all), "lab.shared_state_echo")
	slices.Sort(want)
	require.Equal(t, want, toolNamesOf(t, a, ""), "the device's tool joins every registry tool")
}
