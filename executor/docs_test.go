package executor_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// docRegions returns the code of example_test.go between its "// doc:begin NAME" and "// doc:end NAME"
// markers, by name, without the markers' indentation.
func docRegions(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	regions := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)// doc:begin (\w+)\n(.*?)\n[ \t]*// doc:end (\w+)`).FindAllStringSubmatch(string(src), -1) {
		require.Equal(t, m[1], m[3], "doc markers cross")
		lines := strings.Split(strings.Trim(m[2], "\n"), "\n")
		indent := len(lines[0]) - len(strings.TrimLeft(lines[0], "\t"))
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, strings.Repeat("\t", indent))
		}
		regions[m[1]] = strings.Join(lines, "\n")
	}
	return regions
}

// fences returns the fenced code blocks of a markdown text in the language given.
func fences(doc, lang string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)\n```").FindAllStringSubmatch(doc, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestAddingAToolDoc keeps docs/adding-a-tool.md true: its Go code is example_test.go's (compiled and run by
// go test), and its registry entry, run with that handler by a real executor, does what the page says.
func TestAddingAToolDoc(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/adding-a-tool.md")
	require.NoError(t, err)
	doc := string(raw)

	regions := docRegions(t)
	require.Len(t, regions, 2)
	for name, code := range regions {
		require.Contains(t, fences(doc, "go"), code, "docs/adding-a-tool.md shows example_test.go's %s code verbatim", name)
	}

	entries := fences(doc, "json")
	require.Len(t, entries, 1, "the page shows one registry entry")
	reg, err := registry.Parse([]byte(`{"version": "doc", "tools": [` + entries[0] + `]}`))
	require.NoError(t, err)
	tool, ok := reg.Tool("os.defer_task")
	require.True(t, ok)

	ctx, b := setup(t)
	b.startExecutorWith(t, executor.Config{}, reg, executor.Handlers{"os.defer_task": {Run: executor.Typed(deferTask)}},
		zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))

	var task uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO os_tasks (title) VALUES ('Order flashing') RETURNING id`).Scan(&task))
	until := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	input := func(id uuid.UUID, until time.Time) string {
		b, err := json.Marshal(map[string]any{"task_id": id, "due_at": until})
		require.NoError(t, err)
		return string(b)
	}

	r := b.waitOne(t, ctx, b.call(t, ctx, tool.Name, input(task, until)))
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	var out struct {
		TaskID        uuid.UUID `json:"task_id"`
		DeferredUntil time.Time `json:"deferred_until"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &out))
	require.Equal(t, task, out.TaskID)
	require.True(t, until.Equal(out.DeferredUntil))
	require.Equal(t, map[string]any{"result.task_id": task.String(), "result.deferred_until": until.Format(time.RFC3339)}, r.Summary)
	require.Equal(t, map[string]int{"os_tasks update": 1}, writes(r))
	require.Equal(t, "deferred", b.str(t, ctx, `SELECT status FROM os_tasks WHERE id = $1`, task))

	r = b.waitOne(t, ctx, b.call(t, ctx, tool.Name, input(uuid.New(), until)))
	require.Equal(t, registry.CodeNotFound, r.Error.Code, r.Error.Message)
	r = b.waitOne(t, ctx, b.call(t, ctx, tool.Name, input(task, time.Now().Add(-time.Hour))))
	require.Equal(t, registry.CodeValidation, r.Error.Code, r.Error.Message)
}
