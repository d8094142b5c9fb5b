package llm

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hbollon/go-edlib"
)

// vocabulary is every word the tool documents built so far and the synonyms use: a query's word outside it
// may be a misspelling of a word inside it.
var vocabulary = newWordList(synonymsText)

// wordList is a set of words indexed by first letter (people rarely misspell a word's first letter, and the
// index keeps a correction to a few hundred comparisons).
type wordList struct {
	mu      sync.RWMutex
	known   map[string]bool
	byFirst map[rune][]string
}

func newWordList(texts ...string) *wordList {
	w := &wordList{known: map[string]bool{}, byFirst: map[rune][]string{}}
	w.add(texts...)
	return w
}

// add adds the words of texts.
func (w *wordList) add(texts ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, text := range texts {
		for _, word := range queryWords(text) {
			if w.known[word] {
				continue
			}
			w.known[word] = true
			first, _ := utf8.DecodeRuneInString(word)
			w.byFirst[first] = append(w.byFirst[first], word)
		}
	}
}

// corrections returns the known words a word may be a misspelling of: none when the word is known, short
// (under 4 letters), or holds anything but letters; else those of the same first letter at the least
// distance (transposed letters count one edit), one edit for words of up to 6 letters, two beyond, at most 3.
func (w *wordList) corrections(word string) []string {
	n := utf8.RuneCountInString(word)
	if n < 4 || strings.ContainsFunc(word, func(r rune) bool { return !unicode.IsLetter(r) }) {
		return nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.known[word] {
		return nil
	}
	first, _ := utf8.DecodeRuneInString(word)
	var best []string
	for _, c := range w.byFirst[first] {
		if m := utf8.RuneCountInString(c); (m == n || m == n+1) && edlib.OSADamerauLevenshteinDistance(word, c) == 1 &&
			(m == n+1 || sameLetters(word, c)) && len(best) < 3 {
			best = append(best, c)
		}
	}
	return best
}

// sameLetters reports whether a and b hold the same letters (b is a with two letters swapped, when one edit apart).
func sameLetters(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	slices.Sort(ra)
	slices.Sort(rb)
	return slices.Equal(ra, rb)
}
