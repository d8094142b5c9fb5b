package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocsCLIExamples runs the `brain run`, `brain call`, `brain tools`, `brain calls` and `brain runs` examples
// of docs/brain.md and the README against the shared brain: each exits 0 (the docs' leads.create once lacked
// the suburb GEM's contract requires). Examples with a placeholder (…) or a device are left out.
func TestDocsCLIExamples(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GEM_BRAIN_URL": shared.url, "GEM_BRAIN_TOKEN": testToken}
	getenv := func(k string) string { return env[k] }
	var examples []string
	for _, doc := range []string{"../../../docs/brain.md", "../../../README.md"} {
		raw, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)\n```").FindAllStringSubmatch(string(raw), -1) {
			for _, line := range strings.Split(block[1], "\n") {
				line = strings.TrimPrefix(strings.TrimSpace(line), "bin/")
				if slices.ContainsFunc([]string{"brain run", "brain call", "brain tools", "brain calls", "brain runs"}, func(cmd string) bool {
					return line == cmd || strings.HasPrefix(line, cmd+" ")
				}) &&
					!strings.Contains(line, "…") && !strings.Contains(line, "-device") {
					examples = append(examples, line)
				}
			}
		}
	}
	require.GreaterOrEqual(t, len(examples), 14, "%q", examples)
	for _, line := range examples {
		t.Run(line, func(t *testing.T) {
			args := shellWords(t, line)
			var out, errOut bytes.Buffer
			code := cli(args[1:], getenv, &out, &errOut)
			require.Equal(t, 0, code, "%s\n%s%s", line, out.String(), errOut.String())
		})
	}
}

// shellWords splits a line of the docs as sh would: words, '...' and "..." (no escapes), up to a comment.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			require.GreaterOrEqual(t, end, 0, "unclosed quote in %s", line)
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// TestCLICallErrors: a direct call's errors name its tool (not "planned call 0"), an unknown tool gets the
// closest names, and after a 401 the hint says the token came from -token when it did.
func TestCLICallErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GEM_BRAIN_URL": shared.url, "GEM_BRAIN_TOKEN": testToken}
	getenv := func(k string) string { return env[k] }
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli(args, getenv, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, _ := run("call", "os.create_note", `{"domain": "diary"}`)
	require.Equal(t, 1, code)
	require.Contains(t, out, "os.create_note has invalid input")
	require.NotContains(t, out, "planned call")

	code, out, _ = run("call", "leads.creat", `{}`)
	require.Equal(t, 1, code)
	require.Contains(t, out, `no tool named "leads.creat" in the registry; did you mean leads.create?`)
	require.NotContains(t, out, "planned call")
	code, out, _ = run("call", "create_lead", `{}`)
	require.Equal(t, 1, code)
	require.Contains(t, out, "did you mean leads.create")
	code, out, _ = run("call", "nosuch.tool")
	require.Equal(t, 1, code)
	require.Contains(t, out, `no tool named "nosuch.tool" in the registry, nor one close to it: GET /brain/tools lists them`)

	code, out, errOut := run("run", "-m", "health check", "-token", "wrong-token-0123456789")
	require.Equal(t, 1, code)
	require.Contains(t, out, "unauthorized")
	require.Contains(t, errOut, "(used: -token)")
	code, _, errOut = run("call", "os.health_check", "-token", "wrong-token-0123456789")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "(used: -token)")
}
