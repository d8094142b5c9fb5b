package llm_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gemhq/gem/brain/evals"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// TestToolSearchScopesAndHeals: a search returns only the tools it is given, honours its limit, finds nothing
// for words no tool knows, and adds to the catalog the tools it lacks (a brain with another registry).
func TestToolSearchScopesAndHeals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := sqltest.NewDB(t)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)

	// Nothing loaded: the search loads what it needs.
	hits, err := postgres.ToolSearch(ctx, pool, reg.Tools(), "postpone the chore", 5)
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Equal(t, "os.defer_task", hits[0].Tool.Name)
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_tool_search`).Scan(&rows))
	require.Equal(t, reg.Len(), rows)

	// Scoped to two tools: nothing else comes back, even when it would rank first.
	var scoped []*registry.Tool
	for _, name := range []string{"invoice.send", "os.create_task"} {
		tool, ok := reg.Tool(name)
		require.True(t, ok)
		scoped = append(scoped, tool)
	}
	hits, err = postgres.ToolSearch(ctx, pool, scoped, "postpone the chore", 5)
	require.NoError(t, err)
	for _, h := range hits {
		require.Contains(t, []string{"invoice.send", "os.create_task"}, h.Tool.Name)
	}

	hits, err = postgres.ToolSearch(ctx, pool, reg.Tools(), "send", 2)
	require.NoError(t, err)
	require.Len(t, hits, 2)
	require.GreaterOrEqual(t, hits[0].Score, hits[1].Score)

	for _, q := range []string{"", "   ", "the and of", "xyzzy plugh", `"unbalanced -xyzzy or`} {
		hits, err = postgres.ToolSearch(ctx, pool, reg.Tools(), q, 5)
		require.NoError(t, err, q)
		require.Empty(t, hits, "%q matches nothing", q)
	}

	// Another registry's version of a tool: a row of its own, both searchable, neither overwritten.
	other, err := registry.Parse([]byte(`{"version": "other", "tools": [{"name": "os.defer_task",
		"description": "Snooze a chore in another brain.", "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
		"idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`))
	require.NoError(t, err)
	hits, err = postgres.ToolSearch(ctx, pool, other.Tools(), "snooze", 5)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Same(t, other.Tools()[0], hits[0].Tool)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_tool_search WHERE name = 'os.defer_task'`).Scan(&rows))
	require.Equal(t, 2, rows)
	require.NoError(t, postgres.ToolCatalogLoad(ctx, pool, reg.Tools()), "loading again changes nothing")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_tool_search`).Scan(&rows))
	require.Equal(t, reg.Len()+1, rows)

	// Rows no brain has loaded for 30 days are pruned; a brain still using one adds it back when it searches.
	_, err = pool.Exec(ctx, `UPDATE brain_tool_search SET seen_at = now() - interval '31 days' WHERE key = $1`,
		llm.ToolSearchDocument(other.Tools()[0]).Key)
	require.NoError(t, err)
	require.NoError(t, postgres.ToolCatalogLoad(ctx, pool, reg.Tools()))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_tool_search`).Scan(&rows))
	require.Equal(t, reg.Len(), rows)
	hits, err = postgres.ToolSearch(ctx, pool, other.Tools(), "snooze", 5)
	require.NoError(t, err)
	require.Len(t, hits, 1)
}

// TestToolCatalogConcurrentLoads: brains starting together load the same catalog at once without conflict.
func TestToolCatalogConcurrentLoads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := sqltest.NewDB(t)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	errs := make(chan error, 6)
	for range cap(errs) {
		go func() { errs <- postgres.ToolCatalogLoad(ctx, pool, reg.Tools()) }()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM brain_tool_search`).Scan(&rows))
	require.Equal(t, reg.Len(), rows)
}

// BenchmarkToolSearch measures one search of the repository's 124 tools on PostgreSQL, round trip included,
// cycling through the search suite (evals/search.yaml).
func BenchmarkToolSearch(b *testing.B) {
	ctx := context.Background()
	pool, _ := sqltest.NewDB(b)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(b, err)
	require.NoError(b, postgres.ToolCatalogLoad(ctx, pool, reg.Tools()))
	cases, err := evals.LoadSearch(filepath.Join(testenv.RepoRoot(), "evals"), func(string) bool { return true })
	require.NoError(b, err)
	i := 0
	for b.Loop() {
		if _, err := postgres.ToolSearch(ctx, pool, reg.Tools(), cases[i%len(cases)].Q, 3); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
