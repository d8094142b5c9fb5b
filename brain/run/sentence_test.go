package run_test

import (
	"encoding/json"
	"testing"

	"github.com/gemhq/gem/brain/run"
	"github.com/stretchr/testify/require"
)

type noteIn struct {
	Title string `json:"title"`
}

type noteOut struct {
	NoteID string `json:"note_id"`
}

// TestSaysReadsOnlyObjects: a typed sentence speaks for a result that is an object its types can read, and
// leaves every other result (null, an array, a scalar, a field of the wrong type, an input it cannot read) to
// the generic sentence instead of speaking of an empty one.
func TestSaysReadsOnlyObjects(t *testing.T) {
	t.Parallel()
	s := run.Says(func(in noteIn, out noteOut, _ run.When) string {
		return "Saved " + in.Title + " as " + out.NoteID + "."
	},
		func(in noteIn, out noteOut, has func(string) bool) []string { return []string{"read " + out.NoteID} })
	in := json.RawMessage(`{"title":"gutters"}`)

	said, ok := s.Say(in, json.RawMessage(" \n{\"note_id\":\"n1\"}"), nil)
	require.True(t, ok)
	require.Equal(t, "Saved gutters as n1.", said)
	require.Equal(t, []string{"read n1"}, s.Next(in, json.RawMessage(`{"note_id":"n1"}`), func(string) bool { return true }))

	for _, out := range []string{`null`, `[]`, `[{"note_id":"n1"}]`, `"n1"`, `7`, ``, `   `, `{"note_id":7}`, `{"note_id":`} {
		_, ok := s.Say(in, json.RawMessage(out), nil)
		require.False(t, ok, "result %q", out)
		require.Nil(t, s.Next(in, json.RawMessage(out), func(string) bool { return true }), "result %q", out)
	}
	_, ok = s.Say(json.RawMessage(`{"title":7}`), json.RawMessage(`{"note_id":"n1"}`), nil)
	require.False(t, ok, "an input the sentence cannot read")
}
