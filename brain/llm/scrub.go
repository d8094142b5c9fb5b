package llm

import "github.com/gemhq/gem/sql/gemsql"

// A model may answer with text PostgreSQL cannot store (U+0000, a lone UTF-16 surrogate in its tool calls'
// JSON arguments): stored as it is, the turn's record, its messages or the call made from its arguments
// would fail, and the person who asked would be refused for the model's output. The model's text is not the
// client's, so GEM's rule for it (gemsql's text.go) is to repair it: each such character becomes U+FFFD, in
// its text and in its tool calls' arguments alike, before anything is stored or called.

// scrubNUL repairs everything the model produced.
func (r *Response) scrubNUL() {
	r.Content = gemsql.PlainTextRepaired(r.Content)
	r.StopReason = gemsql.PlainTextRepaired(r.StopReason)
	for i := range r.ToolCalls {
		tc := &r.ToolCalls[i]
		tc.ID = gemsql.PlainTextRepaired(tc.ID)
		tc.Name = gemsql.PlainTextRepaired(tc.Name)
		tc.Arguments = string(gemsql.TextRepaired([]byte(tc.Arguments)))
	}
}
