package executor

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSanitizeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"nul", `"a\u0000b"`, `"a\ufffdb"`},
		{"lone high surrogate", `"a\ud800b"`, `"a\ufffdb"`},
		{"lone low surrogate", `"a\udc00b"`, `"a\ufffdb"`},
		{"high surrogate at the end", `"\ud83d"`, `"\ufffd"`},
		{"high surrogate then another escape", `"\ud83d\u0041"`, `"\ufffd\u0041"`},
		{"two high surrogates then a low one", `"\ud83d\ud83d\ude00"`, `"\ufffd\ud83d\ude00"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"\ud83d\ude00"`},
		{"upper-case hex", `"\uD800\uDC00 \uD800"`, `"\uD800\uDC00 \ufffd"`},
		{"escaped backslash before u", `"\\u0000 \\ud800"`, `"\\u0000 \\ud800"`},
		{"plain text and other escapes", `{"a": "\n\t\"\u00e9"}`, `{"a": "\n\t\"\u00e9"}`},
		{"truncated escape", `"\u00`, `"\u00`},
	}
	for _, tt := range tests {
		got := string(sanitizeJSON([]byte(tt.in)))
		require.Equal(t, tt.want, got, tt.name)
		if json.Valid([]byte(tt.in)) {
			require.True(t, json.Valid([]byte(got)), tt.name)
		}
	}
}
