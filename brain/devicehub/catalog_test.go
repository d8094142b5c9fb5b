package devicehub

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// catalogTool is the contract the test's device serves.
const catalogTool = `{"name": "lab.shared_state_echo", "description": "Echoes a key, through the test's device.",
	"input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"], "additionalProperties": false},
	"output_schema": {"type": "object"}, "permissions": ["read:external"], "idempotency": {"mode": "safe-retry"}, "timeout_ms": 5000}`

// toolNames are a registry's tools, by name.
func toolNames(reg *registry.Registry) []string {
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Name)
	}
	return names
}

// TestRegisteredDeviceJoinsTheCatalog: a device that registers joins the registry's catalog beside every
// registry tool, in order, and the hub tells its listeners what was added.
func TestRegisteredDeviceJoinsTheCatalog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, _ := sqltest.NewDB(t)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	all := toolNames(reg)
	require.Greater(t, len(all), 50)
	require.True(t, slices.IsSorted(all))

	hub, err := New(&Params{Registry: reg, Pool: pool, Log: zerolog.Nop()})
	require.NoError(t, err)
	changed := make(chan CatalogChange, 4)
	hub.OnCatalogChange(func(_ context.Context, ch CatalogChange) { changed <- ch })
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(hub.Close)
	web := httptest.NewServer(hub)
	t.Cleanup(web.Close)

	token, err := gemsql.DeviceCreate(ctx, pool, "shared-state", "tester", []string{"read:*"})
	require.NoError(t, err)
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(web.URL, "http"),
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(t, err)
	defer ws.CloseNow()
	require.NoError(t, wsjson.Write(ctx, ws, &registry.DeviceMessage{Type: registry.DeviceMsgRegister, Tools: []json.RawMessage{json.RawMessage(catalogTool)}}))
	var registered registry.DeviceMessage
	require.NoError(t, wsjson.Read(ctx, ws, &registered))
	require.Equal(t, registry.DeviceMsgRegistered, registered.Type)
	require.Empty(t, registered.Problems)

	select {
	case ch := <-changed:
		require.Len(t, ch.Added, 1)
		require.Equal(t, "lab.shared_state_echo", ch.Added[0].Name)
		require.Empty(t, ch.Removed)
	case <-ctx.Done():
		t.Fatal("the device's tool never joined the catalog")
	}
	want := append(slices.Clone(all), "lab.shared_state_echo")
	slices.Sort(want)
	require.Equal(t, want, toolNames(reg), "the device's tool joins every registry tool")
}
