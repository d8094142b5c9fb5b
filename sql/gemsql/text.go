package gemsql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text PostgreSQL cannot store: its text and jsonb hold no NUL character (U+0000, a raw byte or \u0000 in
// JSON) and only valid UTF-8, and jsonb no lone UTF-16 surrogate (\ud800 without its other half). GEM has one
// rule for such text, here, and every writer follows it:
//
//   - a client's text (a request's body, query or path; an MCP call's arguments) is refused, naming where it
//     is (TextProblem, PlainTextProblem): replacing it would store something the client did not send;
//   - text GEM writes that someone else produced for the client (an LLM's answer, a tool's result or error,
//     a device's answer) is repaired, each such character becoming U+FFFD (TextRepaired,
//     PlainTextRepaired): refusing it would fail the client's request for another's output, and a receipt
//     that cannot be written, the batch it shares.
//
// badChar is the one test of a character, which all four use (badText adds JSON's escapes to it): a
// character is repaired or refused byte for byte, so plain text and JSON text come out the same.

// badChar reads the character of plain text at s[i]: how many bytes it spans and, for one PostgreSQL
// cannot store (a NUL, a byte that is not UTF-8), what is wrong with it.
func badChar[T ~string | ~[]byte](s T, i int) (size int, problem string) {
	c := s[i]
	switch {
	case c == 0:
		return 1, "contains a NUL character"
	case c < utf8.RuneSelf:
		return 1, ""
	}
	// At most utf8.UTFMax bytes, converted on the stack for a []byte: nothing of s is copied to the heap.
	r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
	if r == utf8.RuneError && size <= 1 {
		return 1, "is not valid UTF-8"
	}
	return size, ""
}

// badText reads the character of JSON text at doc[i] (in a string): how many bytes it spans (an escape's
// whole: \n, \u00e9, a surrogate pair) and, for one PostgreSQL cannot store, what is wrong with it.
func badText(doc []byte, i int) (size int, problem string) {
	c := doc[i]
	switch {
	case c == '\\' && i+1 < len(doc) && doc[i+1] == 'u':
		r, ok := hex4(doc, i+2)
		switch {
		case !ok:
			return 2, "" // malformed: the JSON parser refuses it
		case r == 0:
			return 6, `contains a NUL character (\u0000)`
		case r >= 0xDC00 && r <= 0xDFFF:
			return 6, fmt.Sprintf(`contains a lone UTF-16 surrogate (\u%04x)`, r)
		case r >= 0xD800 && r <= 0xDBFF:
			if low, ok := hex4(doc, i+8); ok && doc[i+6] == '\\' && doc[i+7] == 'u' && low >= 0xDC00 && low <= 0xDFFF {
				return 12, ""
			}
			return 6, fmt.Sprintf(`contains a lone UTF-16 surrogate (\u%04x)`, r)
		}
		return 6, ""
	case c == '\\':
		return min(2, len(doc)-i), "" // a one-character escape
	}
	return badChar(doc, i)
}

// hex4 reads the four hexadecimal digits at doc[at:].
func hex4(doc []byte, at int) (rune, bool) {
	if at+4 > len(doc) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(doc[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// suspect reports whether doc may hold text PostgreSQL cannot store: a NUL byte, invalid UTF-8, or a \u
// escape of a NUL or a surrogate. Most documents have none, and skip the scan (and its allocations) with
// two passes over bytes.
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

// TextRepaired returns JSON text doc with every character PostgreSQL cannot store replaced by U+FFFD (an
// escape by \ufffd), for text GEM writes that it did not get from a client: doc itself when there is nothing
// to repair, else a repaired copy. Malformed JSON stays malformed, for its parser to refuse.
func TextRepaired(doc []byte) []byte {
	if !suspect(doc) {
		return doc
	}
	var out []byte
	copied := 0
	for i := 0; i < len(doc); {
		size, problem := badText(doc, i)
		if problem != "" {
			replacement := "\uFFFD"
			if doc[i] == '\\' {
				replacement = `\ufffd`
			}
			out = append(append(out, doc[copied:i]...), replacement...)
			copied = i + size
		}
		i += size
	}
	if out == nil {
		return doc
	}
	return append(out, doc[copied:]...)
}

// PlainTextRepaired is TextRepaired for plain text (not JSON): each NUL and each byte that is not UTF-8
// becomes U+FFFD, byte for byte as TextRepaired replaces them: s itself when there is nothing to repair.
func PlainTextRepaired(s string) string {
	if PlainTextProblem(s) == "" {
		return s
	}
	var out strings.Builder
	out.Grow(len(s) + 8)
	copied := 0
	for i := 0; i < len(s); {
		size, problem := badChar(s, i)
		if problem != "" {
			out.WriteString(s[copied:i])
			out.WriteString("\uFFFD")
			copied = i + size
		}
		i += size
	}
	out.WriteString(s[copied:])
	return out.String()
}

// PlainTextProblem says what is wrong with plain text (a query value, a path segment, a file's content)
// that PostgreSQL cannot store, or "": the first character TextRepaired and PlainTextRepaired would
// replace. It reads a string or a []byte as it is, without converting (copying) it.
func PlainTextProblem[T ~string | ~[]byte](s T) string {
	for i := 0; i < len(s); {
		if c := s[i]; c != 0 && c < utf8.RuneSelf {
			i++ // the common case, without a call
			continue
		}
		size, problem := badChar(s, i)
		if problem != "" {
			return problem
		}
		i += size
	}
	return ""
}

// TextProblem finds, in a JSON document, the first string (a key or a value) PostgreSQL cannot store, for a
// client's text, which is refused: it returns its JSON pointer (a key's is its object's) and what is wrong
// with it, or found false. It only reads what looks like JSON: a document that is not valid JSON is left to
// the JSON parser to refuse.
func TextProblem(doc []byte) (pointer, problem string, found bool) {
	if !suspect(doc) {
		return "", "", false
	}
	s := &textScanner{doc: doc}
	s.value("", 0)
	return s.pointer, s.problem, s.problem != ""
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

// str reads a string at s.pos, checking its text (badText); where is the pointer reported for a problem (for
// a key, the object's). With decode (keys, which a pointer names) it returns the string, decoded by
// encoding/json.
func (s *textScanner) str(where string, decode bool) (string, bool) {
	if s.pos >= len(s.doc) || s.doc[s.pos] != '"' {
		s.pos = len(s.doc)
		return "", false
	}
	start := s.pos
	s.pos++
	for s.pos < len(s.doc) {
		if s.doc[s.pos] == '"' {
			s.pos++
			var text string
			if decode && json.Unmarshal(s.doc[start:s.pos], &text) != nil {
				s.pos = len(s.doc)
				return "", false
			}
			return text, true
		}
		size, problem := badText(s.doc, s.pos)
		if problem != "" {
			s.pointer, s.problem = where, problem
			return "", false
		}
		s.pos += size
	}
	return "", false
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
