package llm_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// toolQuery is a request a person makes and the GEM tool that answers it.
type toolQuery struct {
	Query string `json:"query"`
	Tool  string `json:"tool"`
}

func loadToolQueries(t *testing.T) (queries, heldOut []toolQuery) {
	t.Helper()
	data, err := os.ReadFile("testdata/tool_queries.json")
	require.NoError(t, err)
	var set struct {
		Queries []toolQuery `json:"queries"`
		HeldOut []toolQuery `json:"held_out"`
	}
	require.NoError(t, json.Unmarshal(data, &set))
	return set.Queries, set.HeldOut
}

// TestToolSearchAccuracy ranks the repository's 124 tools for requests phrased as people make them (testdata/
// tool_queries.json: 100 written before the synonyms were curated, and 20 held out, written after) with the
// one tool search, on a real PostgreSQL, and asserts the expected tool is in the top 3 for at least 90% of the
// first set and 75% of the held-out set. It logs top-1 and top-3 accuracy, every miss with what came first,
// and the time per search.
func TestToolSearchAccuracy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := sqltest.NewDB(t)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	gem, err := testenv.GEMRegistry()
	require.NoError(t, err)
	require.NoError(t, postgres.ToolCatalogLoad(ctx, pool, reg.Tools()))

	queries, heldOut := loadToolQueries(t)
	require.GreaterOrEqual(t, len(queries), 60)
	require.GreaterOrEqual(t, len(heldOut), 20)
	var durations []time.Duration
	measure := func(name string, set []toolQuery, bar float64) {
		top1, top3 := 0, 0
		var misses []string
		for _, q := range set {
			_, isGEM := gem.Tool(q.Tool)
			require.True(t, isGEM, "%q expects %s, which is not one of GEM's tools", q.Query, q.Tool)
			start := time.Now()
			hits, err := postgres.ToolSearch(ctx, pool, reg.Tools(), q.Query, 3)
			durations = append(durations, time.Since(start))
			require.NoError(t, err)
			var names []string
			for _, h := range hits {
				names = append(names, h.Tool.Name)
			}
			switch i := slices.Index(names, q.Tool); {
			case i == 0:
				top1++
				top3++
			case i > 0:
				top3++
			default:
				misses = append(misses, q.Query+" → want "+q.Tool+", got ["+strings.Join(names, ", ")+"]")
			}
		}
		n := float64(len(set))
		t.Logf("%s: %d queries, top-1 %.1f%% (%d), top-3 %.1f%% (%d)", name, len(set), 100*float64(top1)/n, top1, 100*float64(top3)/n, top3)
		for _, m := range misses {
			t.Logf("  miss: %s", m)
		}
		require.GreaterOrEqual(t, float64(top3)/n, bar, "%s: top-3 accuracy", name)
	}
	measure("queries", queries, 0.90)
	measure("held-out", heldOut, 0.75)

	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	var total time.Duration
	for _, d := range durations {
		total += d
	}
	t.Logf("search time over %d tools: mean %v, median %v, p95 %v", reg.Len(), total/time.Duration(len(durations)),
		durations[len(durations)/2], durations[len(durations)*95/100])
}

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
// cycling through the query set.
func BenchmarkToolSearch(b *testing.B) {
	ctx := context.Background()
	pool, _ := sqltest.NewDB(b)
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(b, err)
	require.NoError(b, postgres.ToolCatalogLoad(ctx, pool, reg.Tools()))
	data, err := os.ReadFile("testdata/tool_queries.json")
	require.NoError(b, err)
	var set struct {
		Queries []toolQuery `json:"queries"`
	}
	require.NoError(b, json.Unmarshal(data, &set))
	i := 0
	for b.Loop() {
		if _, err := postgres.ToolSearch(ctx, pool, reg.Tools(), set.Queries[i%len(set.Queries)].Query, 3); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
