package llm

import (
	"strings"
	"testing"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestSynonymsFile: every line of synonyms.txt reads, and every word on a left side is a word the
// repository's tools use (in a name or description), so a synonym always leads somewhere.
func TestSynonymsFile(t *testing.T) {
	t.Parallel()
	_, longest, problems := parseSynonyms(synonymsText)
	require.Empty(t, problems)
	require.GreaterOrEqual(t, longest, 3)
	_, _, problems = parseSynonyms("defer: postpone\nno colon here\n: alias\n")
	require.Len(t, problems, 2)

	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(t, err)
	vocabulary := map[string]bool{}
	for _, tool := range reg.Tools() {
		for _, w := range queryWords(nameWords(tool.Name) + " " + tool.Description) {
			vocabulary[normalizeWord(w)] = true
		}
	}
	for _, line := range strings.Split(synonymsText, "\n") {
		targets, _, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		for _, w := range queryWords(targets) {
			require.True(t, vocabulary[normalizeWord(w)], "%q (line %q) is in no tool's name or description", w, line)
		}
	}
}

// TestExpandQuery: words become concepts, the longest known phrase first, forms folded; "or" and symbols are
// never operators; the query is bounded.
func TestExpandQuery(t *testing.T) {
	t.Parallel()
	q := ExpandQuery("Push this To-Do back, POSTPONED!", nil)
	require.Equal(t, []string{"push", "this", "to", "do", "back", "postponed"}, q.Words)
	require.Equal(t, "push this to do back postponed", q.Text())
	require.Contains(t, q.Concepts, `"to do" or task`)
	require.Contains(t, q.Literals, `"to do"`)
	require.Contains(t, q.Concepts, "postponed or defer")
	require.Len(t, q.Literals, len(q.Concepts))

	q = ExpandQuery(`put off the "call" or -email & (sms)`, nil)
	require.Equal(t, `"put off" or defer`, q.Concepts[0], "the longer phrase wins over put → create")
	for _, c := range q.Concepts {
		require.NotContains(t, c, "-")
		require.NotContains(t, c, "&")
	}
	require.NotContains(t, q.Words, "or")

	require.Len(t, ExpandQuery(strings.Repeat("task ", 500), nil).Words, queryMaxWords)
	require.Empty(t, ExpandQuery("  ,;  ", nil).Concepts)
	for _, forms := range [][]string{{"postpone", "postponed", "postpones", "postponing"}, {"bill", "billed", "bills"},
		{"cancel", "cancelled", "cancelling", "cancels"}, {"reply", "replies"}} {
		for _, f := range forms[1:] {
			require.Equal(t, normalizeWord(forms[0]), normalizeWord(f), f)
		}
	}
}

// TestExpandQueryCorrectsMisspellings: a word no tool or synonym knows that is one dropped or swapped letter
// from one they do is widened to it (and to its synonyms); known words, short words, numbers and words more
// than one such slip away are left alone.
func TestExpandQueryCorrectsMisspellings(t *testing.T) {
	t.Parallel()
	words := newVocabulary("remind task invoice enquiry enquiries inspection", "lead: enquiry, enquiries")
	for word, want := range map[string][]string{
		"remnd":     {"remind"},
		"taks":      {"task"},
		"invocie":   {"invoice"},
		"enquries":  {"enquiries"},
		"inspecton": {"inspection"},
		"remind":    nil, // known
		"tsk":       nil, // too short to tell
		"rmnd":      nil, // two letters dropped
		"bemind":    nil, // another first letter
		"remindx":   nil, // an added letter is a different word as often as a slip
		"2044":      nil,
	} {
		require.Equal(t, want, words.corrections(word), word)
	}
	// Through the real vocabulary: the synonyms' words are known from the start.
	q := ExpandQuery("postpne the chore", nil)
	require.Contains(t, q.Concepts, "postpne or postpone or defer")
}

// TestVocabularyIsTheToolsOwn: a search corrects to the words of the tools it may return, not to those of
// tools another search read, whatever the process searched before.
func TestVocabularyIsTheToolsOwn(t *testing.T) {
	t.Parallel()
	parse := func(desc string) []*registry.Tool {
		reg, err := registry.Parse([]byte(`{"version": "v", "tools": [{"name": "yard.water_plants", "description": "` + desc + `",
			"input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "idempotency": {"mode": "none"}, "timeout_ms": 1000}]}`))
		require.NoError(t, err)
		return reg.Tools()
	}
	gardens := VocabularyOf(parse("Water the hydrangeas."))
	kitchens := VocabularyOf(parse("Clean the kitchen."))
	require.Contains(t, ExpandQuery("water the hydrangas", gardens).Concepts, "hydrangas or hydrangeas")
	require.Contains(t, ExpandQuery("water the hydrangas", kitchens).Concepts, "hydrangas")
	require.Same(t, gardens, VocabularyOf(parse("Water the hydrangeas.")), "built once per set of tools")
}
