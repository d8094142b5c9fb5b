package api

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// GEM refuses, rather than replaces, text it cannot store faithfully: PostgreSQL's text and jsonb hold no
// NUL character, and a JSON string with invalid UTF-8 or a lone UTF-16 surrogate (\ud800) has no exact
// meaning, so silently replacing it with U+FFFD would store something the client did not send. Every such
// request is a 400 naming where the bad text is; nothing is stored.

// textProblem scans a JSON document for strings (keys and values) PostgreSQL cannot store: invalid UTF-8,
// a \u0000 escape (or a raw NUL byte), or a lone surrogate escape. It returns the JSON pointer of the first
// one and what is wrong with it, or ok. It only reads what looks like JSON: a document that is not valid
// JSON is left to the JSON parser to refuse.
func textProblem(doc []byte) (pointer, problem string, found bool) {
	s := &textScanner{doc: doc}
	s.value("")
	return s.pointer, s.problem, s.problem != ""
}

type textScanner struct {
	doc     []byte
	pos     int
	pointer string
	problem string
}

func (s *textScanner) done() bool { return s.problem != "" || s.pos >= len(s.doc) }

func (s *textScanner) skipSpace() {
	for s.pos < len(s.doc) && strings.IndexByte(" \t\r\n", s.doc[s.pos]) >= 0 {
		s.pos++
	}
}

// value scans one value at path; on malformed input it stops (s.pos moves to the end).
func (s *textScanner) value(path string) {
	s.skipSpace()
	if s.done() {
		return
	}
	switch s.doc[s.pos] {
	case '{':
		s.pos++
		for !s.done() {
			s.skipSpace()
			if s.pos < len(s.doc) && s.doc[s.pos] == '}' {
				s.pos++
				return
			}
			key, ok := s.str(path)
			if !ok {
				if s.problem != "" {
					s.problem = "has a property name that " + s.problem
				}
				return
			}
			s.skipSpace()
			if s.pos >= len(s.doc) || s.doc[s.pos] != ':' {
				s.pos = len(s.doc)
				return
			}
			s.pos++
			s.value(path + "/" + escapePointer(key))
			s.skipSpace()
			if s.pos < len(s.doc) && s.doc[s.pos] == ',' {
				s.pos++
			}
		}
	case '[':
		s.pos++
		for i := 0; !s.done(); i++ {
			s.skipSpace()
			if s.pos < len(s.doc) && s.doc[s.pos] == ']' {
				s.pos++
				return
			}
			s.value(path + "/" + strconv.Itoa(i))
			s.skipSpace()
			if s.pos < len(s.doc) && s.doc[s.pos] == ',' {
				s.pos++
			} else if s.pos < len(s.doc) && s.doc[s.pos] != ']' {
				s.pos = len(s.doc)
			}
		}
	case '"':
		s.str(path)
	default:
		// A number, true, false or null: skip to the next delimiter.
		for s.pos < len(s.doc) && strings.IndexByte(",]} \t\r\n", s.doc[s.pos]) < 0 {
			s.pos++
		}
	}
}

// str reads a string at s.pos, checking its text; where is the pointer reported for a problem (for a key,
// the object's). It returns the decoded string, for keys.
func (s *textScanner) str(where string) (string, bool) {
	if s.pos >= len(s.doc) || s.doc[s.pos] != '"' {
		s.pos = len(s.doc)
		return "", false
	}
	s.pos++
	var b strings.Builder
	fail := func(problem string) (string, bool) {
		s.pointer, s.problem = where, problem
		return "", false
	}
	for s.pos < len(s.doc) {
		c := s.doc[s.pos]
		switch {
		case c == '"':
			s.pos++
			return b.String(), true
		case c == 0:
			return fail("contains a NUL character")
		case c == '\\':
			if s.pos+1 >= len(s.doc) {
				s.pos = len(s.doc)
				return "", false
			}
			if s.doc[s.pos+1] != 'u' {
				b.WriteByte(s.doc[s.pos+1])
				s.pos += 2
				continue
			}
			r, ok := s.hex4(s.pos + 2)
			if !ok {
				s.pos = len(s.doc)
				return "", false
			}
			s.pos += 6
			switch {
			case r == 0:
				return fail(`contains a NUL character (\u0000)`)
			case r >= 0xDC00 && r <= 0xDFFF:
				return fail(fmt.Sprintf(`contains a lone UTF-16 surrogate (\u%04x)`, r))
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := rune(0), false
				if s.pos+1 < len(s.doc) && s.doc[s.pos] == '\\' && s.doc[s.pos+1] == 'u' {
					low, ok = s.hex4(s.pos + 2)
				}
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return fail(fmt.Sprintf(`contains a lone UTF-16 surrogate (\u%04x)`, r))
				}
				s.pos += 6
				b.WriteRune(0x10000 + (r-0xD800)<<10 + (low - 0xDC00))
			default:
				b.WriteRune(r)
			}
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.doc[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return fail("is not valid UTF-8")
			}
			b.WriteRune(r)
			s.pos += size
		}
	}
	return "", false
}

func (s *textScanner) hex4(at int) (rune, bool) {
	if at+4 > len(s.doc) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s.doc[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// plainTextProblem says what is wrong with a parameter's text (a query value, a path segment), or "".
func plainTextProblem(v string) string {
	switch {
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	case strings.IndexByte(v, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}
