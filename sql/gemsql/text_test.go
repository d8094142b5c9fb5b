package gemsql_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemhq/gem/sql/gemsql"
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
		{"a surrogate pair is a character", `{"a": "\ud83d\ude00 \uD83D\uDE00"}`, "", ""},
		{"a high surrogate then another escape", `{"a": "\ud83d\u0041"}`, "/a", `contains a lone UTF-16 surrogate (\ud83d)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pointer, problem, found := gemsql.TextProblem([]byte(tt.doc))
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
				if _, _, found := gemsql.TextProblem(bc.doc); found {
					b.Fatal("found a problem in a clean body")
				}
			}
		})
	}
}

// TestTextRepaired: text GEM writes that it did not get from a client (an LLM's answer, a tool's result or
// error, a device's answer) has what PostgreSQL cannot store replaced by U+FFFD, by the test TextProblem
// refuses a client's text with: everything TextProblem finds, TextRepaired repairs.
func TestTextRepaired(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in, want string
	}{
		{"nul", `"a\u0000b"`, `"a\ufffdb"`},
		{"raw nul", "{\"a\": \"x\x00\"}", "{\"a\": \"x\uFFFD\"}"},
		{"invalid utf-8", "{\"a\": \"x\xffy\"}", "{\"a\": \"x\uFFFDy\"}"},
		{"lone high surrogate", `"a\ud800b"`, `"a\ufffdb"`},
		{"lone low surrogate", `"a\udc00b"`, `"a\ufffdb"`},
		{"high surrogate at the end", `"\ud83d"`, `"\ufffd"`},
		{"high surrogate then another escape", `"\ud83d\u0041"`, `"\ufffd\u0041"`},
		{"two high surrogates then a low one", `"\ud83d\ud83d\ude00"`, `"\ufffd\ud83d\ude00"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"\ud83d\ude00"`},
		{"upper-case hex", `"\uD800\uDC00 \uD800"`, `"\uD800\uDC00 \ufffd"`},
		{"escaped backslash before u", `"\\u0000 \\ud800"`, `"\\u0000 \\ud800"`},
		{"an escaped backslash, then an escape", `{"title": "a\\\u0000b"}`, `{"title": "a\\\ufffdb"}`},
		{"a key", `{"b\u0000": 1}`, `{"b\ufffd": 1}`},
		{"plain text and other escapes", `{"a": "\n\t\"\u00e9"}`, `{"a": "\n\t\"\u00e9"}`},
		{"truncated escape", `"\u00`, `"\u00`},
		{"cut after a backslash", `{"title": "cut\`, `{"title": "cut\`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := gemsql.TextRepaired([]byte(tt.in))
			require.Equal(t, tt.want, string(got))
			_, _, found := gemsql.TextProblem(got)
			require.False(t, found, "what is repaired holds nothing TextProblem refuses")
			if json.Valid([]byte(strings.ToValidUTF8(tt.in, ""))) {
				require.True(t, json.Valid(got))
			}
		})
	}
	clean := []byte(`{"a": "b"}`)
	require.Same(t, &clean[0], &gemsql.TextRepaired(clean)[0], "nothing to repair: the document itself")
}

// TestPlainText: plain text is refused and repaired by the rule JSON text is, byte for byte: a run of bytes
// that are not UTF-8 becomes as many U+FFFD in both, and a string or a []byte is read as it is.
func TestPlainText(t *testing.T) {
	t.Parallel()
	require.Empty(t, gemsql.PlainTextProblem("café ☕"))
	require.Equal(t, "contains a NUL character", gemsql.PlainTextProblem("a\x00"))
	require.Equal(t, "is not valid UTF-8", gemsql.PlainTextProblem("a\xff"))
	require.Equal(t, "café ☕", gemsql.PlainTextRepaired("café ☕"))
	for _, tt := range []struct {
		name, in, want string
	}{
		{"a nul and a byte that is not UTF-8", "a\x00b\xff", "a\uFFFDb\uFFFD"},
		{"two bytes that are not UTF-8", "a\xff\xfeb", "a\uFFFD\uFFFDb"},
		{"a character cut short", "a\xe2\x98b", "a\uFFFD\uFFFDb"},
		{"a surrogate written in UTF-8", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"nuls in a row", "\x00\x00", "\uFFFD\uFFFD"},
		{"cut at the end", "☕\xe2\x98", "☕\uFFFD\uFFFD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, gemsql.PlainTextRepaired(tt.in))
			require.Equal(t, `"`+tt.want+`"`, string(gemsql.TextRepaired([]byte(`"`+tt.in+`"`))), "the rule of JSON text")
			require.NotEmpty(t, gemsql.PlainTextProblem(tt.in))
			require.Equal(t, gemsql.PlainTextProblem(tt.in), gemsql.PlainTextProblem([]byte(tt.in)))
			require.Empty(t, gemsql.PlainTextProblem(tt.want))
		})
	}
}

// TestPlainTextProblemCopiesNothing: a []byte (a skill file's content) is read as it is, not converted to a
// string. Not parallel: testing.AllocsPerRun counts the whole process's allocations.
func TestPlainTextProblemCopiesNothing(t *testing.T) {
	content := []byte(strings.Repeat("café ☕ ", 1000))
	invalid := append(content[:len(content):len(content)], 0xff)
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = gemsql.PlainTextProblem(content) }))
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = gemsql.PlainTextProblem(invalid) }))
}
