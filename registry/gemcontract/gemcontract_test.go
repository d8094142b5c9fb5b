package gemcontract_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemcontract"
	"github.com/stretchr/testify/require"
)

// A registry of the shape GEM's has, with prose in every place a schema may hold it, and properties named
// like annotations.
const sampleSource = `{"version": "9", "tools": [{
	"name": "os.create_task",
	"description": "Makes a sample task for the extract's test.",
	"input_schema": {"type": "object", "title": "Task input", "required": ["title"],
		"properties": {
			"title": {"type": "string", "maxLength": 200, "description": "What the task is called"},
			"description": {"type": "string", "title": "Long text", "$comment": "a note for editors"},
			"limit": {"type": "integer", "minimum": 1, "default": 100, "examples": [5, "five or so"]},
			"tags": {"type": "array", "items": {"type": "string", "description": "One tag of many"}},
			"when": {"anyOf": [{"type": "string", "format": "date", "description": "A day"}, {"type": "null"}]}
		}},
	"output_schema": {"type": "object", "properties": {"task_id": {"type": "string", "format": "uuid", "description": "The new task's id"}}},
	"permissions": ["write:tasks"], "idempotency": {"mode": "keyed", "key_field": "title"},
	"timeout_ms": 5000, "receipt_fields": ["result.task_id"]}]}`

// The sample's tool as the extract must keep it: every fact, no prose, the properties named title and
// description included.
const sampleTool = `{"name": "os.create_task",
	"input_schema": {"type": "object", "required": ["title"],
		"properties": {
			"title": {"type": "string", "maxLength": 200},
			"description": {"type": "string"},
			"limit": {"type": "integer", "minimum": 1, "default": 100},
			"tags": {"type": "array", "items": {"type": "string"}},
			"when": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]}
		}},
	"output_schema": {"type": "object", "properties": {"task_id": {"type": "string", "format": "uuid"}}},
	"permissions": ["write:tasks"], "idempotency": {"mode": "keyed", "key_field": "title"},
	"timeout_ms": 5000, "receipt_fields": ["result.task_id"]}`

var sampleProse = []string{"Makes a sample task for the extract's test.", "Task input", "What the task is called", "Long text",
	"a note for editors", "five or so", "One tag of many", "A day", "The new task's id"}

func hashes(t *testing.T, shingles []byte) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for line := range strings.Lines(string(shingles)) {
		if line = strings.TrimSpace(line); !strings.HasPrefix(line, "#") {
			require.Regexp(t, `^[0-9a-f]{64}$`, line)
			set[line] = true
		}
	}
	return set
}

func TestExtractKeepsFactsAndHashesProse(t *testing.T) {
	contract, shingles, err := gemcontract.Extract([]byte(sampleSource))
	require.NoError(t, err)
	var c gemcontract.Contract
	require.NoError(t, json.Unmarshal(contract, &c))
	require.Equal(t, "9", c.Version)
	require.Len(t, c.Tools, 1)
	require.JSONEq(t, sampleTool, string(c.Tools[0]))

	got := hashes(t, shingles)
	want := map[string]bool{}
	for _, text := range sampleProse {
		for _, h := range gemcontract.Shingles(text) {
			want[h] = true
		}
	}
	require.Equal(t, want, got, "exactly the shingles of the prose: no property name, enum or other fact")
	require.NotContains(t, string(contract)+string(shingles), "task is called", "no prose in either file")
}

func TestExtractIsDeterministic(t *testing.T) {
	c1, s1, err := gemcontract.Extract([]byte(sampleSource))
	require.NoError(t, err)
	c2, s2, err := gemcontract.Extract([]byte(sampleSource))
	require.NoError(t, err)
	require.Equal(t, c1, c2)
	require.Equal(t, s1, s2)
	// The same registry written in another key order and spacing gives the same tools, byte for byte.
	var v any
	require.NoError(t, json.Unmarshal([]byte(sampleSource), &v))
	compact, _ := json.Marshal(v)
	c3, s3, err := gemcontract.Extract(compact)
	require.NoError(t, err)
	tools := func(c []byte) string { return string(c[bytes.Index(c, []byte(`"tools"`)):]) }
	require.Equal(t, tools(c1), tools(c3))
	require.Equal(t, hashLines(s1), hashLines(s3))
}

func hashLines(s []byte) string {
	var out []string
	for line := range strings.Lines(string(s)) {
		if !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

func TestExtractRefusesAFieldItDoesNotKnow(t *testing.T) {
	src := strings.Replace(sampleSource, `"timeout_ms": 5000`, `"timeout_ms": 5000, "summary": "a new text field"`, 1)
	_, _, err := gemcontract.Extract([]byte(src))
	require.ErrorContains(t, err, `"summary"`)
}

func TestShingles(t *testing.T) {
	sha := func(s string) string { return gemcontract.Shingles(s)[0] }
	require.Len(t, gemcontract.Shingles("one two three four five six"), 2)
	require.Equal(t, []string{sha("one two three four five"), sha("two three four five six")},
		gemcontract.Shingles("One, two — THREE four: five (six)."), "case and punctuation do not count")
	require.Len(t, gemcontract.Shingles("CKR lead ID"), 1, "a short text is one run")
	require.Empty(t, gemcontract.Shingles(" -- "))
	require.NotEqual(t, sha("CKR lead ID"), sha("CKR lead"))

	gem := map[string]bool{}
	for _, h := range gemcontract.Shingles("Return the lead's full record with every note") {
		gem[h] = true
	}
	require.True(t, gemcontract.Repeats("Here: the lead's full record with every photo.", gem), "five words in a row")
	require.False(t, gemcontract.Repeats("Show the whole record with every note.", gem), "four words in a row are not GEM's wording")
}

// TestCommittedExtract: the committed files are what the generator writes (canonical form, the same source),
// hold GEM's 105 tools and no prose keyword in any schema.
func TestCommittedExtract(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", gemcontract.ContractFile))
	require.NoError(t, err)
	c, err := gemcontract.Load()
	require.NoError(t, err)
	require.Len(t, c.Tools, 105)
	require.Regexp(t, `^[0-9a-f]{64}$`, c.SourceSHA256)

	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	require.NoError(t, d.Decode(&v))
	var canon bytes.Buffer
	enc := json.NewEncoder(&canon)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(v))
	require.True(t, canon.String() == string(raw), "the contract is in the generator's form (make gem-contract)")

	names := map[string]bool{}
	for _, tool := range c.Tools {
		var entry map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(tool, &entry))
		require.ElementsMatch(t, []string{"name", "input_schema", "output_schema", "permissions", "idempotency", "timeout_ms", "receipt_fields"},
			slices.Collect(maps.Keys(entry)))
		var name string
		require.NoError(t, json.Unmarshal(entry["name"], &name))
		names[name] = true
		for _, schema := range []string{"input_schema", "output_schema"} {
			prose, err := gemcontract.Annotations(entry[schema])
			require.NoError(t, err)
			require.Empty(t, prose, "%s %s", name, schema)
		}
	}
	require.Len(t, names, 105)

	shingles, err := os.ReadFile(filepath.Join("testdata", gemcontract.ShinglesFile))
	require.NoError(t, err)
	require.Contains(t, string(shingles), c.SourceSHA256, "both files come from one run on one source")
	lines := strings.Split(strings.TrimSpace(hashLines(shingles)), "\n")
	require.True(t, slices.IsSorted(lines))
	require.Equal(t, len(lines), len(slices.Compact(slices.Clone(lines))))
	require.Equal(t, len(lines), len(gemcontract.ProseShingles()))
	require.Greater(t, len(lines), 500, "GEM's 105 descriptions give hundreds of runs")
	require.Equal(t, hashes(t, shingles), gemcontract.ProseShingles())
}

// TestRegistry: the extract loads as a registry with GEM's facts and our descriptions.
func TestRegistry(t *testing.T) {
	ours := []byte(`{"version": "1", "tools": [
		{"name": "os.health_check", "description": "Our words for the health check.", "input_schema": {"type": "object"},
		 "output_schema": {"type": "object"}, "permissions": ["read:db"], "idempotency": {"mode": "safe-retry"},
		 "timeout_ms": 1000, "receipt_fields": []},
		{"name": "ours.only", "description": "A tool GEM has not.", "input_schema": {"type": "object"},
		 "output_schema": {"type": "object"}, "permissions": ["read:db"], "idempotency": {"mode": "safe-retry"},
		 "timeout_ms": 1000, "receipt_fields": []}]}`)
	gem, err := gemcontract.Registry(ours)
	require.NoError(t, err)
	require.Equal(t, 105, gem.Len())
	health, ok := gem.Tool("os.health_check")
	require.True(t, ok)
	require.Equal(t, "Our words for the health check.", health.Description)
	require.Equal(t, int64(8000), health.TimeoutMS, "GEM's timeout, not ours")
	require.Error(t, health.ValidateOutput([]byte(`{}`)), "GEM's output schema requires status and checks")
	note, _ := gem.Tool("os.create_note")
	require.Regexp(t, regexp.MustCompile(`missing from our registry`), note.Description)
	_, ok = gem.Tool("ours.only")
	require.False(t, ok)

	both, err := gemcontract.WithOurTools(ours)
	require.NoError(t, err)
	require.Equal(t, 106, both.Len())
	only, ok := both.Tool("ours.only")
	require.True(t, ok)
	require.Equal(t, registry.ModeSafeRetry, only.Idempotency.Mode)
}
