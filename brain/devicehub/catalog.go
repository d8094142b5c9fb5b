package devicehub

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5"
)

// The catalog: the tools of the devices that are alive join the brain's registry (registry.SetDeviceTools),
// so GET /brain/tools, tool search, MCP tools/list and agents' tools show them while their devices are
// there and not after. Every brain keeps its own copy, read again when a device changes (a notification on
// DeviceChangedChannel) and at least once per catalogPoll.

const catalogPoll = 5 * time.Second

// CatalogChange is what changed in the catalog: device tools that appeared, and those that left.
type CatalogChange struct {
	Added   []*registry.Tool
	Removed []*registry.Tool
}

// OnCatalogChange registers fn to be told of every change of the device tools (before Start).
func (h *Hub) OnCatalogChange(fn func(context.Context, CatalogChange)) {
	h.onChange = append(h.onChange, fn)
}

// catalogSQL reads the tools of the devices alive now.
const catalogSQL = `SELECT t.tool_name, t.device, t.contract::text FROM core_device_tools t
	JOIN core_devices d ON d.name = t.device
	WHERE gem_device_alive(d) ORDER BY t.tool_name, t.device`

// watchCatalog keeps the registry's device tools current until ctx ends.
func (h *Hub) watchCatalog(ctx context.Context) {
	defer close(h.cataloging)
	wake, stop := h.listener.Watch(gemsql.DeviceChangedChannel, "")
	defer stop()
	t := time.NewTicker(catalogPoll)
	defer t.Stop()
	for {
		// A panic in a refresh (a bug, a callback's) is logged and the next refresh tries again.
		refresh := func() error { return h.RefreshCatalog(ctx) }
		if err := gemlog.Guarded(&h.log, "refreshing the device catalog", refresh); err != nil && ctx.Err() == nil {
			h.log.Warn().Err(err).Msg("could not read the devices' tools; the catalog keeps what it had")
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
		// A device's heartbeat deadline passes without a notification until a sweep expires it; a short
		// pause also lets a burst of changes (many devices reconnecting) make one refresh.
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// RefreshCatalog reads the device tools now and updates the registry if they changed.
func (h *Hub) RefreshCatalog(ctx context.Context) error {
	h.catalogMu.Lock()
	defer h.catalogMu.Unlock()
	rows, err := h.pool.Query(ctx, catalogSQL)
	if err != nil {
		return err
	}
	type row struct{ Tool, Device, Contract string }
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return err
	}
	servedBy := map[string][]string{}
	contracts := map[string]string{}
	for _, r := range list {
		servedBy[r.Tool] = append(servedBy[r.Tool], r.Device)
		if _, ok := contracts[r.Tool]; !ok {
			contracts[r.Tool] = r.Contract
		}
	}
	sum := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(servedBy)) {
		b, _ := json.Marshal([]any{name, servedBy[name], contracts[name]})
		sum.Write(b)
	}
	var key [32]byte
	copy(key[:], sum.Sum(nil))
	if key == h.catalogKey && h.catalogSet {
		return nil
	}

	tools := make([]*registry.Tool, 0, len(contracts))
	byName := map[string]*registry.Tool{}
	for name, raw := range contracts {
		t, err := h.compiled(raw)
		if err != nil {
			h.log.Error().Err(err).Str("tool", name).Msg("a registered device tool does not load; it is left out")
			continue
		}
		tools = append(tools, t)
		byName[name] = t
	}
	var change CatalogChange
	for name, t := range byName {
		if _, own := h.reg.OwnTool(name); own {
			continue
		}
		if old, ok := h.catalog[name]; !ok || old != t {
			change.Added = append(change.Added, t)
		}
	}
	for name, old := range h.catalog {
		if _, own := h.reg.OwnTool(name); own {
			continue
		}
		if t, ok := byName[name]; !ok || t != old {
			change.Removed = append(change.Removed, old)
		}
	}
	h.reg.SetDeviceTools(tools, servedBy)
	h.catalog, h.catalogKey, h.catalogSet = byName, key, true
	if len(change.Added)+len(change.Removed) > 0 {
		h.log.Info().Int("added", len(change.Added)).Int("removed", len(change.Removed)).Int("device_tools", len(byName)).Msg("device tools changed")
		for _, fn := range h.onChange {
			fn(ctx, change)
		}
		h.TestSignals.CatalogChanged.Signal(change)
	}
	return nil
}

// compiled compiles a registered contract, once per distinct contract: an unchanged tool keeps its
// *registry.Tool across refreshes.
func (h *Hub) compiled(raw string) (*registry.Tool, error) {
	key := sha256.Sum256([]byte(raw))
	if t, ok := h.contracts[key]; ok {
		return t, nil
	}
	t, err := registry.ParseDeviceTool(json.RawMessage(raw))
	if err != nil {
		return nil, err
	}
	if len(h.contracts) > 10_000 {
		clear(h.contracts) // devices re-registering new contracts forever: start over rather than grow
	}
	h.contracts[key] = t
	return t, nil
}
