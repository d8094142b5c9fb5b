package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// scriptDoc is a registry of script tools: name → implementation.
func scriptDoc(t *testing.T, tools map[string]map[string]any) []byte {
	t.Helper()
	var list []any
	for name, impl := range tools {
		list = append(list, map[string]any{"name": name, "description": "d", "input_schema": map[string]any{"type": "object"},
			"output_schema": map[string]any{}, "idempotency": map[string]any{"mode": "none"}, "timeout_ms": 1000,
			"permissions": []any{"write:db"}, "implementation": impl})
	}
	b, err := json.Marshal(map[string]any{"version": "1", "tools": list})
	require.NoError(t, err)
	return b
}

func TestScriptImplementation(t *testing.T) {
	t.Parallel()
	r, err := Parse(scriptDoc(t, map[string]map[string]any{
		"lab.greet":  {"type": "script", "source": "function main(input) { return {said: 'hi ' + input.name}; }"},
		"lab.twice":  {"type": "script", "source": "function main(input) { return [gem.lab.greet(input), gem.lab.greet(input)]; }", "calls": []any{"lab.greet"}},
		"lab.helper": {"type": "script", "source": "const k = 2;\nfunction main(input) { return k; }"},
	}))
	require.NoError(t, err)
	twice, _ := r.Tool("lab.twice")
	require.Equal(t, ImplScript, twice.ImplementationType())
	require.NotNil(t, twice.Implementation.Program())
	require.Equal(t, []string{"lab.greet"}, twice.Implementation.Calls)
	// Its calls commit on their own: a second run would make them again, so a run cut short is not redone.
	require.True(t, twice.HasOutsideEffects())
	require.True(t, twice.RunsAtMostOnce())
	greet, _ := r.Tool("lab.greet")
	require.False(t, greet.HasOutsideEffects(), "a script that calls nothing keeps what its permissions say")

	for _, c := range []struct {
		name  string
		tools map[string]map[string]any
		field string
		msg   string
	}{
		{"no source", map[string]map[string]any{"lab.a": {"type": "script"}}, "implementation.source", "is required"},
		{"a syntax error", map[string]map[string]any{"lab.a": {"type": "script", "source": "function main(input) {\n  return input.;\n}"}},
			"implementation.source", "does not compile: line 2"},
		{"no main", map[string]map[string]any{"lab.a": {"type": "script", "source": "function run(input) { return 1; }"}},
			"implementation.source", "defines no function main(input)"},
		{"a call of an unknown tool", map[string]map[string]any{"lab.a": {"type": "script", "source": "function main() {}", "calls": []any{"lab.nope"}}},
			"implementation.calls", `names "lab.nope", which is not a tool of the registry`},
		{"a script calling itself", map[string]map[string]any{"lab.a": {"type": "script", "source": "function main() {}", "calls": []any{"lab.a"}}},
			"implementation.calls", "calls itself through lab.a → lab.a"},
		{"two scripts calling each other", map[string]map[string]any{
			"lab.a": {"type": "script", "source": "function main() {}", "calls": []any{"lab.b"}},
			"lab.b": {"type": "script", "source": "function main() {}", "calls": []any{"lab.a"}}},
			"implementation.calls", "calls itself through"},
		{"rest fields on a script", map[string]map[string]any{"lab.a": {"type": "script", "source": "function main() {}", "url": "http://x"}},
			"implementation", `of type "script" takes only "source" and "calls"`},
		{"a source on a rest tool", map[string]map[string]any{"lab.a": {"type": "rest", "method": "GET", "url": "http://x/", "source": "function main() {}"}},
			"implementation", `"source" and "calls" belong to type "script"`},
	} {
		_, err := Parse(scriptDoc(t, c.tools))
		var ce *CheckError
		require.ErrorAs(t, err, &ce, c.name)
		found := false
		for _, p := range ce.Problems {
			if p.Field == c.field && strings.Contains(p.Message, c.msg) {
				found = true
			}
		}
		require.True(t, found, "%s: no problem %s %q in %v", c.name, c.field, c.msg, fmt.Sprint(ce.Problems))
	}
}
