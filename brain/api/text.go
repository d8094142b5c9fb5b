package api

import (
	"bytes"
	"encoding/json"
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
	if !suspect(doc) {
		return "", "", false
	}
	s := &textScanner{doc: doc}
	s.value("", 0)
	return s.pointer, s.problem, s.problem != ""
}

// suspect reports whether doc may hold bad text: a NUL byte, invalid UTF-8, or a \u escape of a NUL or a
// surrogate. Most bodies have none, and skip the scan (and its allocations) with two passes over bytes.
func suspect(doc []byte) bool {
	if !utf8.Valid(doc) || bytes.IndexByte(doc, 0) >= 0 {
		return true
	}
	for i := 0; ; i++ {
		j := bytes.Index(doc[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j
		if hex := doc[i+2 : min(i+6, len(doc))]; bytes.Equal(hex, []byte("0000")) ||
			len(hex) >= 2 && (hex[0] == 'd' || hex[0] == 'D') && strings.IndexByte("89abcdefABCDEF", hex[1]) >= 0 {
			return true
		}
	}
}

// maxDepth is where the scan stops descending; encoding/json refuses documents nested deeper, so the parser
// that follows reports them.
const maxDepth = 10000

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

// value scans one value at path, depth containers deep; on malformed input it stops (s.pos moves to the end).
func (s *textScanner) value(path string, depth int) {
	s.skipSpace()
	if s.done() {
		return
	}
	if depth > maxDepth {
		s.pos = len(s.doc)
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
			key, ok := s.str(path, true)
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
			s.value(path+"/"+escapePointer(key), depth+1)
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
			s.value(path+"/"+strconv.Itoa(i), depth+1)
			s.skipSpace()
			if s.pos < len(s.doc) && s.doc[s.pos] == ',' {
				s.pos++
			} else if s.pos < len(s.doc) && s.doc[s.pos] != ']' {
				s.pos = len(s.doc)
			}
		}
	case '"':
		s.str(path, false)
	default:
		// A number, true, false or null: skip to the next delimiter.
		for s.pos < len(s.doc) && strings.IndexByte(",]} \t\r\n", s.doc[s.pos]) < 0 {
			s.pos++
		}
	}
}

// str reads a string at s.pos, checking its text; where is the pointer reported for a problem (for a key,
// the object's). With decode (keys, which a pointer names) it returns the string, decoded by encoding/json.
func (s *textScanner) str(where string, decode bool) (string, bool) {
	if s.pos >= len(s.doc) || s.doc[s.pos] != '"' {
		s.pos = len(s.doc)
		return "", false
	}
	start := s.pos
	s.pos++
	fail := func(problem string) (string, bool) {
		s.pointer, s.problem = where, problem
		return "", false
	}
	for s.pos < len(s.doc) {
		c := s.doc[s.pos]
		switch {
		case c == '"':
			s.pos++
			var text string
			if decode && json.Unmarshal(s.doc[start:s.pos], &text) != nil {
				s.pos = len(s.doc)
				return "", false
			}
			return text, true
		case c == 0:
			return fail("contains a NUL character")
		case c == '\\' && s.pos+1 < len(s.doc) && s.doc[s.pos+1] == 'u':
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
			}
		case c == '\\':
			s.pos += 2 // a one-character escape
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.doc[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return fail("is not valid UTF-8")
			}
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
