package businessrun

import (
	"encoding/json"
	"fmt"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
)

// The contract's inputs give ids as text, as the registry's schemas do (the brain's rules build them); the
// handlers read them here.

// recordID reads the id an input's field gives: text that is not a UUID names no record GEM keeps, so the
// call ends not_found naming the field, as the executor answers for an input field declared a uuid.UUID
// (Call.Bind). A handler reads its ids before the rest of its input, as decoding did.
func recordID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		raw, _ := json.Marshal(s)
		return uuid.Nil, &executor.Error{Code: registry.CodeNotFound, Details: map[string]any{"field": field},
			Message: fmt.Sprintf("%s %s names no record: GEM's ids are UUIDs (%v)", field, raw, err)}
	}
	return id, nil
}

// optionalText is s trimmed, or nil when it is blank: a contract's optional text, left out or empty.
func optionalText(s string) *string { return trimmedText(&s) }
