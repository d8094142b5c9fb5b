package gemsql_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestDocsSQLExamples prepares every query of the docs' and the README's sql blocks against the migrated
// schema, so a table, column, function or type an example names exists as the example uses it. A value left
// for the reader ('…' or '...') is prepared as NULL. Statements PREPARE cannot take (LISTEN, CREATE ...,
// psql's \copy) are left out.
func TestDocsSQLExamples(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	docs = append(docs, "../../README.md")
	preparable := regexp.MustCompile(`(?i)^(SELECT|INSERT|UPDATE|DELETE|WITH)\b`)
	placeholder := regexp.MustCompile(`'(?:…|\.\.\.)'`)
	checked := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, block := range regexp.MustCompile("(?s)```sql\n(.*?)\n\\s*```").FindAllStringSubmatch(string(raw), -1) {
			var lines []string
			for _, line := range strings.Split(block[1], "\n") {
				if code, _, _ := strings.Cut(line, "--"); strings.TrimSpace(code) != "" {
					lines = append(lines, code)
				}
			}
			for _, stmt := range strings.Split(strings.Join(lines, "\n"), ";") {
				stmt = strings.TrimSpace(stmt)
				if !preparable.MatchString(stmt) {
					continue
				}
				name := fmt.Sprintf("doc_example_%d", checked)
				_, err := b.pool.Exec(ctx, "PREPARE "+name+" AS "+placeholder.ReplaceAllString(stmt, "NULL"))
				require.NoError(t, err, "%s: %s", doc, stmt)
				_, err = b.pool.Exec(ctx, "DEALLOCATE "+name)
				require.NoError(t, err)
				checked++
			}
		}
	}
	require.GreaterOrEqual(t, checked, 15)
	t.Logf("%d statements of the docs prepared", checked)
}

// TestDocsCallExamples checks the calls the docs make with SQL against the repository's registry: each input
// of an INSERT INTO core_tool_calls (of a tool the registry has, without a placeholder) is valid, but the one
// the README shows failing on purpose. (docs/receipts.md's os.create_task lacked its domain.)
func TestDocsCallExamples(t *testing.T) {
	t.Parallel()
	reg, err := registry.Load("../../tools.registry.json")
	require.NoError(t, err)
	brokenOnPurpose := map[string]bool{"../../README.md leads.create": true}
	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	call := regexp.MustCompile(`\(\s*'([a-z_.]+)'\s*,\s*'(\{.*?\})'`)
	checked := 0
	for _, doc := range append(docs, "../../README.md") {
		raw, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, block := range regexp.MustCompile("(?s)```sql\n(.*?)\n\\s*```").FindAllStringSubmatch(string(raw), -1) {
			if !strings.Contains(block[1], "INSERT INTO core_tool_calls") {
				continue
			}
			for _, m := range call.FindAllStringSubmatch(block[1], -1) {
				tool, ok := reg.Tool(m[1])
				if !ok || strings.Contains(m[2], "…") {
					continue
				}
				err := tool.ValidateInput([]byte(m[2]))
				if brokenOnPurpose[doc+" "+m[1]] {
					require.Error(t, err, "%s: %s is shown failing", doc, m[1])
				} else {
					require.NoError(t, err, "%s: %s %s", doc, m[1], m[2])
				}
				checked++
			}
		}
	}
	require.GreaterOrEqual(t, checked, 6)
}

// TestReceiptDocExample: docs/receipts.md's example receipt is one its tool could write now: every result
// field it shows fits the tool's output schema and, when the tool takes the field as input, the input's
// enum (the example showed priority "urgent", which tasks are no longer made with), and its summary is the
// tool's receipt_fields (it showed one the tool has not).
func TestReceiptDocExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/receipts.md")
	require.NoError(t, err)
	example := regexp.MustCompile("(?s)Example:\n\n```json\n(.*?)\n```").FindStringSubmatch(string(raw))
	require.NotNil(t, example)
	var receipt struct {
		Tool    string            `json:"tool"`
		Result  map[string]any    `json:"result"`
		Effects *registry.Effects `json:"effects"`
		Summary map[string]any    `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(example[1]), &receipt))
	reg, err := registry.Load("../../tools.registry.json")
	require.NoError(t, err)
	tool, ok := reg.Tool(receipt.Tool)
	require.True(t, ok, receipt.Tool)

	delete(receipt.Result, "...") // the fields left out
	var schema map[string]any
	require.NoError(t, json.Unmarshal(tool.OutputSchema, &schema))
	delete(schema, "required")
	shown, err := registry.Parse([]byte(fmt.Sprintf(`{"version": "doc", "tools": [{"name": "doc.example", "description": "The example's tool.",
		"input_schema": {"type": "object"}, "output_schema": %s, "idempotency": {"mode": "none"}, "permissions": ["read:db"], "timeout_ms": 1000}]}`,
		mustJSON(t, schema))))
	require.NoError(t, err)
	docTool, _ := shown.Tool("doc.example")
	require.NoError(t, docTool.ValidateOutput(mustJSON(t, receipt.Result)))

	var input struct {
		Properties map[string]struct {
			Enum []any `json:"enum"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(tool.InputSchema, &input))
	for field, value := range receipt.Result {
		if enum := input.Properties[field].Enum; enum != nil {
			require.Contains(t, enum, value, "result.%s is a value the tool is not given", field)
		}
	}

	want := tool.Summarize(mustJSON(t, receipt.Result), receipt.Effects)
	require.JSONEq(t, string(mustJSON(t, want)), string(mustJSON(t, receipt.Summary)))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
