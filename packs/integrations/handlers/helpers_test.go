package integrationshandlers_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationshandlers "github.com/gemhq/gem/packs/integrations/handlers"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemcontract"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// registryPath is the repository's registry. Every result must also match the original GEM's output schema
// (GEM's contract, the repository's extract in registry/gemcontract).
const registryPath = "../../../tools.registry.json"

var (
	ourRegistry = sync.OnceValues(func() (*registry.Registry, error) { return registry.Load(registryPath) })
	gemRegistry = sync.OnceValues(func() (*registry.Registry, error) {
		ours, err := os.ReadFile(registryPath)
		if err != nil {
			return nil, err
		}
		return gemcontract.Registry(ours)
	})
)

// testBundle is a private database with an executor running the integrations pack.
type testBundle struct {
	pool   *pgxpool.Pool
	waiter *gemsql.ReceiptWaiter
}

// setup starts an executor with the pack configured by cfg on a database of the test's own.
func setup(t *testing.T, cfg integrationspack.Config) (context.Context, *testBundle) {
	t.Helper()
	return setupWith(t, cfg, businesspack.Config{})
}

// setupWith is setup with the business pack's settings the pack reads (its SMS and email providers).
func setupWith(t *testing.T, cfg integrationspack.Config, biz businesspack.Config) (context.Context, *testBundle) {
	t.Helper()
	pool, url := sqltest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	reg, err := ourRegistry()
	require.NoError(t, err)
	b := &testBundle{pool: pool, waiter: gemsql.NewReceiptWaiter(pool, nil)}
	require.NoError(t, b.waiter.Start(ctx))
	t.Cleanup(b.waiter.Stop)

	h := executor.Handlers{}
	integrationshandlers.Register(h, cfg, biz)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	e, err := executor.New(executor.Config{DatabaseURL: url, ID: "test-" + uuid.NewString()[:8]}, reg, h, pool, log)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(stopCtx)
	})
	return ctx, b
}

// run makes a call with plain SQL, as a person would in psql, waits for its receipt and checks a success
// against GEM's output schema.
func (b *testBundle) run(t *testing.T, ctx context.Context, tool string, input any) *registry.Receipt {
	t.Helper()
	raw, err := json.Marshal(input)
	require.NoError(t, err)
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`, tool, raw).Scan(&id))
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := b.waiter.Wait(waitCtx, []uuid.UUID{id})
	require.NoError(t, err, "no receipt for %s", tool)
	r := res.Receipts[id]
	requireGEMOutput(t, r)
	return r
}

// requireGEMOutput checks a succeeded result against GEM's output schema.
func requireGEMOutput(t *testing.T, r *registry.Receipt) {
	t.Helper()
	if r.Status != registry.StatusSucceeded {
		return
	}
	gem, err := gemRegistry()
	require.NoError(t, err, "GEM's contract")
	tool, ok := gem.Tool(r.ToolName)
	require.True(t, ok, "%s is not a GEM tool", r.ToolName)
	require.NoError(t, tool.ValidateOutput(r.Result), "%s: the result does not match GEM's output schema: %s", r.ToolName, r.Result)
}

// ok requires a succeeded receipt and decodes its result.
func ok[T any](t *testing.T, r *registry.Receipt) T {
	t.Helper()
	require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %+v", r.ToolName, r.Error)
	var out T
	require.NoError(t, json.Unmarshal(r.Result, &out))
	return out
}

// refused requires a receipt that ended with code and returns its message.
func refused(t *testing.T, r *registry.Receipt, code registry.ErrorCode) string {
	t.Helper()
	require.NotEqual(t, registry.StatusSucceeded, r.Status, "%s succeeded: %s", r.ToolName, r.Result)
	require.Equal(t, code, r.Error.Code, "%s: %s", r.ToolName, r.Error.Message)
	return r.Error.Message
}

// notConfigured requires a not_configured receipt naming env among the variables to set.
func notConfigured(t *testing.T, r *registry.Receipt, env ...string) {
	t.Helper()
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%s: %s %+v", r.ToolName, r.Result, r.Error)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.NotEmpty(t, d.Reason)
	require.NotEmpty(t, d.NextSteps)
	for _, e := range env {
		require.Contains(t, d.RequiredEnv, e, r.ToolName)
	}
}

// writes sums the receipt's db_writes per "table op".
func writes(r *registry.Receipt) map[string]int {
	m := map[string]int{}
	for _, w := range r.Effects.DBWrites {
		m[w.Table+" "+w.Op] += w.Count
	}
	return m
}

func (b *testBundle) count(t *testing.T, ctx context.Context, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&n))
	return n
}
