package llm

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/gemhq/gem/registry"
)

// Defaults of tool search.
const (
	// ToolSearchThresholdDefault is the number of tools above which a model is offered the best-ranked tools
	// (or a tool search) rather than every tool.
	ToolSearchThresholdDefault = 40
	// ToolSearchLimitDefault is how many tools a search returns when not told.
	ToolSearchLimitDefault = 5
	// ToolSearchLimitMax is the most tools one search returns.
	ToolSearchLimitMax = 50
)

// searchDocumentVersion changes when ToolSearchDocument builds documents differently, so a catalog row
// built the old way is never mistaken for the new one.
const searchDocumentVersion = "1"

// SearchDocument is what tool search indexes about a tool (brain/postgres stores it in brain_tool_search,
// weighting NameWords A, Description B and Properties C).
type SearchDocument struct {
	// Key is the SHA-256 of everything below: catalog rows are shared by every registry holding the same tool.
	Key string
	// Name is the registry name.
	Name string
	// NameWords is the name as words: "os defer task".
	NameWords string
	// Description is the tool's description.
	Description string
	// Properties are the input's property names as words, their descriptions and enum values.
	Properties string
}

// documents caches search documents by tool: registry tools never change once loaded, and a search needs
// the keys of every tool it may return.
var documents sync.Map // *registry.Tool → SearchDocument

// ToolSearchDocument builds a tool's search document (once per tool).
func ToolSearchDocument(t *registry.Tool) SearchDocument {
	if d, ok := documents.Load(t); ok {
		return d.(SearchDocument)
	}
	d := SearchDocument{Name: t.Name, NameWords: nameWords(t.Name), Description: t.Description}
	var schema any
	_ = json.Unmarshal(t.InputSchema, &schema)
	var parts []string
	walkProperties(schema, &parts, 0)
	d.Properties = strings.Join(parts, " ")
	sum := sha256.New()
	for _, s := range []string{searchDocumentVersion, d.Name, d.NameWords, d.Description, d.Properties} {
		fmt.Fprintf(sum, "%d:%s", len(s), s)
	}
	d.Key = hex.EncodeToString(sum.Sum(nil))
	documents.Store(t, d)
	return d
}

func nameWords(name string) string {
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '_' || r == '-' }), " ")
}

// walkProperties collects property names (as words), descriptions and enum values, nested ones included.
func walkProperties(node any, parts *[]string, depth int) {
	m, ok := node.(map[string]any)
	if !ok || depth > 6 {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			*parts = append(*parts, nameWords(name))
			p, _ := props[name].(map[string]any)
			if desc, ok := p["description"].(string); ok {
				*parts = append(*parts, desc)
			}
			if enum, ok := p["enum"].([]any); ok {
				for _, v := range enum {
					if s, ok := v.(string); ok {
						*parts = append(*parts, nameWords(s))
					}
				}
			}
			walkProperties(p, parts, depth+1)
		}
	}
	if items, ok := m["items"]; ok {
		walkProperties(items, parts, depth+1)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[k].([]any); ok {
			for _, a := range alts {
				walkProperties(a, parts, depth+1)
			}
		}
	}
}

// SearchQuery is a query prepared for tool search: its words, and its concepts — each a word or phrase of
// the query OR-ed with the vocabulary tools use for it (synonyms.txt) — in websearch_to_tsquery syntax.
type SearchQuery struct {
	// Words are the query's words, lowercased, for trigram matching of names.
	Words []string
	// Concepts are "word" or "\"push back\" or defer or postpone": a tool scores for each concept it matches.
	Concepts []string
	// Literals are the words or phrases of the query the concepts came from ("word", "\"push back\""), in the
	// same order: a tool holding the person's own words scores more than one holding only their synonyms.
	Literals []string
	// Numbers say, per concept, that it is a word with a digit (a phone number's digits, an amount, a date): a
	// value for the call rather than what to do, so it weighs nothing in coverage.
	Numbers []bool
}

// Text is the query's words joined by spaces.
func (q SearchQuery) Text() string { return strings.Join(q.Words, " ") }

//go:embed synonyms.txt
var synonymsText string

// synonyms maps an alias (its words, normalized and joined by spaces) to the words tools use for it. A line
// that is not "words: aliases" is left out (TestSynonymsFile keeps the file clean).
var synonyms, synonymMaxWords, _ = parseSynonyms(synonymsText)

// parseSynonyms reads synonyms.txt: the aliases, the most words an alias has, and the lines it could not read.
func parseSynonyms(text string) (map[string][]string, int, []string) {
	out := map[string][]string{}
	longest := 1
	var problems []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		targets, aliases, ok := strings.Cut(s, ":")
		words := queryWords(targets)
		if !ok || len(words) == 0 {
			problems = append(problems, fmt.Sprintf("line %d: want \"words tools use: alias, alias\", not %q", line, s))
			continue
		}
		for _, alias := range strings.Split(aliases, ",") {
			aw := queryWords(alias)
			if len(aw) == 0 {
				continue
			}
			key := normalizedKey(aw)
			for _, w := range words {
				if !slices.Contains(out[key], w) {
					out[key] = append(out[key], w)
				}
			}
			longest = max(longest, len(aw))
		}
	}
	return out, longest, problems
}

// queryMaxWords bounds the words of a query that count: a request is a sentence or two, and an LLM's
// search_tools query is not checked at an edge.
const queryMaxWords = 64

// ExpandQuery prepares a query: its words, each phrase or word of it with the synonyms that apply (longest
// phrase first), as concepts. A word vocab lacks that is one slip from a word it has is widened to that word
// (and its synonyms); a nil vocab knows the synonyms' words only.
func ExpandQuery(query string, vocab *Vocabulary) SearchQuery {
	if vocab == nil {
		vocab = synonymVocabulary
	}
	words := queryWords(query)
	words = words[:min(len(words), queryMaxWords)]
	q := SearchQuery{Words: words}
	seen := map[string]bool{}
	for i := 0; i < len(words); {
		n, targets := 1, []string(nil)
		for size := min(synonymMaxWords, len(words)-i); size >= 1; size-- {
			if t, ok := synonyms[normalizedKey(words[i:i+size])]; ok {
				n, targets = size, t
				break
			}
		}
		phrase := strings.Join(words[i:i+n], " ")
		terms := []string{phrase}
		if n > 1 {
			terms[0] = `"` + phrase + `"`
		}
		for _, t := range targets {
			if t != phrase {
				terms = append(terms, t)
			}
		}
		if n == 1 && len(targets) == 0 {
			// A word no tool and no synonym knows may be a misspelling of one that does ("remnd", "taks").
			for _, c := range vocab.corrections(phrase) {
				terms = append(terms, c)
				for _, t := range synonyms[normalizeWord(c)] {
					if !slices.Contains(terms, t) {
						terms = append(terms, t)
					}
				}
			}
		}
		concept := strings.Join(terms, " or ")
		if !seen[concept] {
			seen[concept] = true
			q.Concepts = append(q.Concepts, concept)
			q.Literals = append(q.Literals, terms[0])
			q.Numbers = append(q.Numbers, strings.ContainsFunc(phrase, unicode.IsDigit))
		}
		i += n
	}
	return q
}

// queryWords splits text into lowercase words of letters and digits ("to-do" is "to", "do"). The word "or"
// is left out: websearch_to_tsquery reads it as an operator, and it is a stop word anyway.
func queryWords(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := fields[:0]
	for _, f := range fields {
		if f != "or" {
			out = append(out, f)
		}
	}
	return out
}

func normalizedKey(words []string) string {
	n := make([]string, len(words))
	for i, w := range words {
		n[i] = normalizeWord(w)
	}
	return strings.Join(n, " ")
}

// normalizeWord folds the English endings people vary ("postponed", "postpones", "postponing" all become
// "postpon") so a synonym matches every form. It only has to map forms of a word together, the same way for
// aliases and queries; PostgreSQL's stemmer does the real matching.
func normalizeWord(w string) string {
	w = strings.TrimSuffix(w, "'s")
	for _, suffix := range []string{"ies", "ing", "ed", "es", "s"} {
		if stem, ok := strings.CutSuffix(w, suffix); ok && len(stem) >= 3 {
			if suffix == "ies" {
				stem += "y"
			}
			w = stem
			break
		}
	}
	if len(w) > 3 {
		w = strings.TrimSuffix(w, "e")
	}
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		w = w[:n-1] // "cancell" and "cancel", "bill" and "billed"
	}
	return w
}
