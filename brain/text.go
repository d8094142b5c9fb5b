package brain

import (
	"fmt"

	"github.com/gemhq/gem/sql/gemsql"
)

// CheckText refuses a client's JSON document (a request's body, an MCP call's arguments) holding text
// PostgreSQL cannot store, naming where it is: EINVALID, and nothing is stored. GEM's one rule for such text
// is gemsql's (text.go): a client's is refused, never replaced, since replacing it would store something the
// client did not send.
func CheckText(doc []byte) error {
	pointer, problem, found := gemsql.TextProblem(doc)
	if !found {
		return nil
	}
	where := "the request body"
	if pointer != "" {
		where = pointer
	}
	return &Error{Code: EINVALID, Message: fmt.Sprintf("%s %s; GEM stores text exactly, so it refuses what it cannot store", where, problem),
		Details: map[string]any{"pointer": pointer, "problem": problem}}
}
