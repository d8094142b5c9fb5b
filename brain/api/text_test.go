package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTextProblem(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 200000) + `"\u0000"` + strings.Repeat("]", 200000)
	for _, tt := range []struct {
		name, doc, pointer, problem string
	}{
		{"clean", `{"a": "b", "c": [1, "d\n\u00e9\ud83d\ude00"]}`, "", ""},
		{"an escaped backslash before u0000 is text", `{"a": "\\u0000"}`, "", ""},
		{"nul escape", `{"a": {"b": ["x", "\u0000"]}}`, "/a/b/1", `contains a NUL character (\u0000)`},
		{"raw nul", "{\"a\": \"x\x00\"}", "/a", "contains a NUL character"},
		{"lone high surrogate", `{"a": "\ud800x"}`, "/a", `contains a lone UTF-16 surrogate (\ud800)`},
		{"lone low surrogate", `["\uDC00"]`, "/0", `contains a lone UTF-16 surrogate (\udc00)`},
		{"invalid utf-8", "{\"a\": \"\xff\"}", "/a", "is not valid UTF-8"},
		{"bad key", `{"ok": 1, "b\u0000": 2}`, "", `has a property name that contains a NUL character (\u0000)`},
		{"key with escapes names the pointer", `{"a/b~\"c": "\u0000"}`, `/a~1b~0"c`, `contains a NUL character (\u0000)`},
		{"root string", `"\u0000"`, "", `contains a NUL character (\u0000)`},
		{"nested past the depth JSON allows is left to the parser", deep, "", ""},
		{"not JSON", `{"a" "b", "\u0000"}`, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pointer, problem, found := textProblem([]byte(tt.doc))
			require.Equal(t, tt.problem != "", found)
			require.Equal(t, tt.pointer, pointer)
			require.Equal(t, tt.problem, problem)
		})
	}
}

// BenchmarkTextProblem measures the check every request body gets: a typical clean run request, and one with
// an escape that needs the full scan.
func BenchmarkTextProblem(b *testing.B) {
	clean := []byte(`{"message": "create a task to call John about the gutters tomorrow, urgent", "mode": "enqueue_and_wait",
		"context": {"lead_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}, "limits": {"max_tool_calls": 10, "wait_timeout_ms": 30000}}`)
	escaped := []byte(`{"message": "note that caf\u00e9 Ren\u00e9e called \ud83d\ude00", "context": {"lead_id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}}`)
	for _, bc := range []struct {
		name string
		doc  []byte
	}{{"clean", clean}, {"surrogate_pair", escaped}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, found := textProblem(bc.doc); found {
					b.Fatal("found a problem in a clean body")
				}
			}
		})
	}
}
