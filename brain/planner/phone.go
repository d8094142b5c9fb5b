package planner

import (
	"fmt"
	"regexp"
	"unicode"

	"github.com/gemhq/gem/registry/phone"
)

// phoneRunRe finds what may be a phone number in a message: digits, with spaces, brackets, dots and dashes
// between them, after a + or a bracket or not.
var phoneRunRe = regexp.MustCompile(`(?:\+|\(\s*)?\d[\d\s().-]*\d\)?`)

// phoneIn finds the first phone number in text, read as the executor reads leads' numbers (package phone,
// in region): where it is and the number. Of a run of digits it takes the longest stretch of whole words
// that is a number ("0412 345 678 2 storeys" is 0412 345 678). No run is loc nil; runs of 6 digits or more
// none of which is a number are a question about field, saying why the first is not one.
func phoneIn(text, field, region string) (loc []int, n phone.Number, err error) {
	var notOne error
	for _, run := range phoneRunRe.FindAllStringIndex(text, -1) {
		ends := wordEnds(text, run[0], run[1])
		for i, from := range ends.starts {
			for j := len(ends.ends) - 1; j >= i; j-- {
				to := ends.ends[j]
				number, perr := phone.Parse(text[from:to], region)
				if perr == nil {
					return []int{from, to}, number, nil
				}
				if notOne == nil && i == 0 && j == len(ends.ends)-1 && len(phone.Digits(text[from:to])) >= 6 {
					notOne = perr
				}
			}
		}
	}
	if notOne != nil {
		return nil, phone.Number{}, notANumber(field, notOne)
	}
	return nil, phone.Number{}, nil
}

// runWords are where the words of a run of text start and end.
type runWords struct{ starts, ends []int }

// wordEnds splits text[from:to] at white space: the starts and ends of its words, in text's offsets.
func wordEnds(text string, from, to int) runWords {
	var w runWords
	in := false
	for i := from; i < to; i++ {
		space := unicode.IsSpace(rune(text[i]))
		switch {
		case !space && !in:
			w.starts = append(w.starts, i)
			in = true
		case space && in:
			w.ends = append(w.ends, i)
			in = false
		}
	}
	if in {
		w.ends = append(w.ends, to)
	}
	return w
}

// notANumber is the question about a text that is not a phone number (err says why).
func notANumber(field string, err error) error {
	return Missing(field, fmt.Sprintf("%v: what is the number? For example 0412 345 678 or +61 412 345 678", err))
}
