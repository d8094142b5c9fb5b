package llm

import (
	"crypto/sha256"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/gemhq/gem/registry"
)

// Vocabulary is the words a set of tools' search documents and the synonyms use: a query's word outside it may
// be a misspelling of a word inside it. It is built once per set of tools (VocabularyOf) and only read after.
type Vocabulary struct {
	known   map[string]bool
	byFirst map[rune][]string // sorted, so corrections come in one order whatever built the list
}

// synonymVocabulary is the synonyms' words alone, for a query with no tools to read.
var synonymVocabulary = newVocabulary(synonymsText)

func newVocabulary(texts ...string) *Vocabulary {
	v := &Vocabulary{known: map[string]bool{}, byFirst: map[rune][]string{}}
	for _, text := range texts {
		for _, word := range queryWords(text) {
			if !v.known[word] {
				v.known[word] = true
				first, _ := utf8.DecodeRuneInString(word)
				v.byFirst[first] = append(v.byFirst[first], word)
			}
		}
	}
	for _, words := range v.byFirst {
		slices.Sort(words)
	}
	return v
}

// vocabularies caches a Vocabulary per set of tools (the registry's, an agent's): a search reads the one of the
// tools it may return, so what it corrects to never depends on what else the process searched.
var vocabularies struct {
	sync.Mutex
	bySet map[[32]byte]*Vocabulary
}

// vocabulariesMax bounds the cache: sets of tools come and go with agents and devices.
const vocabulariesMax = 256

// VocabularyOf returns the vocabulary of tools' search documents and the synonyms, built once per set.
func VocabularyOf(tools []*registry.Tool) *Vocabulary {
	sum := sha256.New()
	for _, t := range tools {
		sum.Write([]byte(ToolSearchDocument(t).Key))
	}
	var key [32]byte
	copy(key[:], sum.Sum(nil))
	vocabularies.Lock()
	defer vocabularies.Unlock()
	if v, ok := vocabularies.bySet[key]; ok {
		return v
	}
	texts := []string{synonymsText}
	for _, t := range tools {
		d := ToolSearchDocument(t)
		texts = append(texts, d.NameWords, d.Description, d.Properties)
	}
	v := newVocabulary(texts...)
	if vocabularies.bySet == nil || len(vocabularies.bySet) >= vocabulariesMax {
		vocabularies.bySet = map[[32]byte]*Vocabulary{}
	}
	vocabularies.bySet[key] = v
	return v
}

// corrections returns the known words a word may be a misspelling of: none when the word is known, short
// (under 4 letters) or holds anything but letters; else the known words of the same first letter that the
// word is one dropped letter ("remnd": remind) or two swapped neighbours ("taks": task) away from, at most 3,
// in alphabetical order. An added or changed letter is not read as a slip: it makes another real word as often
// as a typo ("wages", "pages").
func (v *Vocabulary) corrections(word string) []string {
	w := []rune(word)
	if len(w) < 4 || slices.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) || v.known[word] {
		return nil
	}
	var out []string
	for _, c := range v.byFirst[w[0]] {
		if oneSlip(w, []rune(c)) {
			out = append(out, c)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// oneSlip reports whether typed is known with one letter dropped, or with two neighbouring letters swapped.
func oneSlip(typed, known []rune) bool {
	i := 0
	for i < len(typed) && i < len(known) && typed[i] == known[i] {
		i++
	}
	switch len(known) - len(typed) {
	case 1: // dropped: known[i] is missing from typed
		return slices.Equal(typed[i:], known[i+1:])
	case 0: // swapped: typed[i], typed[i+1] are known[i+1], known[i]
		return i+1 < len(typed) && typed[i] == known[i+1] && typed[i+1] == known[i] && slices.Equal(typed[i+2:], known[i+2:])
	}
	return false
}
