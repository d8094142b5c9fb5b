package llm

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScrubNUL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"title": "a\u0000b"}`, `{"title": "a\ufffdb"}`},
		{`{"title": "a\\u0000b"}`, `{"title": "a\\u0000b"}`},   // an escaped backslash, then text
		{`{"title": "a\\\u0000b"}`, `{"title": "a\\\ufffdb"}`}, // an escaped backslash, then an escape
		{"{\"title\": \"a\x00b\"}", "{\"title\": \"a\uFFFDb\"}"},
		{`{"title": "\u00001"}`, `{"title": "\ufffd1"}`},
		{`{"title": "a\ud800b"}`, `{"title": "a\ufffdb"}`}, // a lone surrogate, which jsonb refuses too
		{`{"n": 1}`, `{"n": 1}`},
		{`{"title": "cut\`, `{"title": "cut\`},
	} {
		r := &Response{ToolCalls: []ToolCall{{Arguments: tc.in}}}
		r.scrubNUL()
		got := r.ToolCalls[0].Arguments
		require.Equal(t, tc.want, got, tc.in)
		if json.Valid([]byte(tc.in)) {
			var v any
			require.NoError(t, json.Unmarshal([]byte(got), &v), got)
			require.NotContains(t, fmt.Sprint(v), "\x00", got)
		}
	}
	r := &Response{Content: "a\x00b\xff", ToolCalls: []ToolCall{{ID: "x\x00", Name: "n", Arguments: `{"a": "\u0000"}`}}}
	r.scrubNUL()
	require.Equal(t, "a\uFFFDb\uFFFD", r.Content)
	require.Equal(t, "x\uFFFD", r.ToolCalls[0].ID)
	require.Equal(t, `{"a": "\ufffd"}`, r.ToolCalls[0].Arguments)
}
