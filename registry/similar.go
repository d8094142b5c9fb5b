package registry

import (
	"sort"
	"strings"
)

// similarMax is how many names SimilarNames suggests.
const similarMax = 3

// SimilarNames suggests up to three tool names close to an unknown one, closest first: names that share words
// with it ("create_lead" → leads.create, "invoice.pay" → invoice.add_payment) and names a few typos away
// ("os.create_tsak" → os.create_task). A name close to none gets none.
func (r *Registry) SimilarNames(name string) []string {
	type candidate struct {
		name           string
		words, letters int
	}
	name = strings.ToLower(strings.TrimSpace(name))
	asked := nameWords(name)
	typos := max(3, len(name)/3)
	var found []candidate
	for _, t := range r.Tools() {
		c := candidate{name: t.Name, words: sharedWords(asked, nameWords(t.Name)), letters: EditDistance(name, t.Name)}
		// Sharing every word is close whatever the order; sharing some is close when the rest is a few typos.
		if c.letters <= typos || c.words > 0 && (c.words == len(asked) || c.letters <= 2*typos) {
			found = append(found, c)
		}
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i], found[j]
		switch {
		case a.words != b.words:
			return a.words > b.words
		case a.letters != b.letters:
			return a.letters < b.letters
		}
		return a.name < b.name
	})
	out := make([]string, 0, similarMax)
	for _, c := range found[:min(len(found), similarMax)] {
		out = append(out, c.name)
	}
	return out
}

// nameWords splits a tool name into its words: "leads.create_lead" → leads, create, lead.
func nameWords(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '.' || r == '_' || r == '-' || r == ' ' })
}

// sharedWords counts the words of asked that one of words matches: the same word, one starting with it (3
// letters or more: "pay" → payment, "lead" → leads), or one a typo away (5 letters or more).
func sharedWords(asked, words []string) int {
	n := 0
	for _, a := range asked {
		for _, w := range words {
			if a == w || len(a) >= 3 && strings.HasPrefix(w, a) || len(a) >= 5 && EditDistance(a, w) <= 1 {
				n++
				break
			}
		}
	}
	return n
}

// EditDistance is the Levenshtein distance between a and b, in bytes (the CLI suggests commands by it too).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
