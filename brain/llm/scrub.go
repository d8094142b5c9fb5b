package llm

import "strings"

// A model may answer with U+0000, which PostgreSQL's text and jsonb cannot hold: stored as it is, the turn's
// record, its messages or the call made from its arguments would fail, and the person who asked would be
// refused for the model's output. Unlike a client's text (refused with 400 by the API), the model's is
// repaired: each NUL becomes U+FFFD, in its text and in its tool calls' JSON arguments alike.

const replacement = "\uFFFD"

// scrubNUL replaces NUL in everything the model produced.
func (r *Response) scrubNUL() {
	r.Content = strings.ReplaceAll(r.Content, "\x00", replacement)
	r.StopReason = strings.ReplaceAll(r.StopReason, "\x00", replacement)
	for i := range r.ToolCalls {
		tc := &r.ToolCalls[i]
		tc.ID = strings.ReplaceAll(tc.ID, "\x00", replacement)
		tc.Name = strings.ReplaceAll(tc.Name, "\x00", replacement)
		tc.Arguments = scrubJSONNUL(tc.Arguments)
	}
}

// scrubJSONNUL replaces NUL in JSON text: raw NUL bytes, and \u0000 escapes (not an escaped backslash
// followed by the letters u0000, which is text). Malformed JSON stays malformed for the parser to refuse.
func scrubJSONNUL(doc string) string {
	if !strings.Contains(doc, "\x00") && !strings.Contains(doc, `u0000`) {
		return doc
	}
	var b strings.Builder
	b.Grow(len(doc))
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == 0:
			b.WriteString(replacement)
		case c == '\\' && i+1 < len(doc):
			if doc[i+1] == 'u' && strings.HasPrefix(doc[i+2:], "0000") {
				b.WriteString(`\ufffd`)
				i += 5
			} else {
				b.WriteByte(c)
				b.WriteByte(doc[i+1])
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
