package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

const token = "cli-test-token-0123456789"

// TestCLI runs `brain run` against a real brain, executor and PostgreSQL and checks its output and exit codes.
func TestCLI(t *testing.T) {
	t.Parallel()
	_, dbURL := sqltest.NewDB(t)
	e, err := testenv.StartExecutor(dbURL)
	require.NoError(t, err)
	t.Cleanup(e.Stop)
	m := &Main{Config: Config{DatabaseURL: dbURL, RegistryPath: testenv.RegistryPath(), Addr: "127.0.0.1:0",
		Tokens: []api.Token{{Name: "cli", Value: token}}}, Log: zerolog.Nop()}
	require.NoError(t, m.Open(context.Background()))
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	env := map[string]string{"GEM_BRAIN_URL": m.Server.URL(), "GEM_BRAIN_TOKEN": token}
	getenv := func(k string) string { return env[k] }

	cli := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli(args, getenv, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := cli("run", "-m", "create a task to call John tomorrow, urgent")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "ok (HTTP 200)")
	require.Contains(t, out, "Created task “call John” (urgent priority, due")
	require.Contains(t, out, "os.create_task")
	require.Contains(t, out, "succeeded")

	code, out, _ = cli("run", "-json", "-M", "answer", "-m", "list my tasks")
	require.Equal(t, 0, code)
	var resp brain.RunResponse
	require.NoError(t, json.Unmarshal([]byte(out), &resp))
	require.True(t, resp.OK)
	require.Equal(t, brain.ModeAnswer, resp.Decision.Mode)

	code, out, _ = cli("run", "-m", "sing a song")
	require.Equal(t, 1, code, "nothing understood is not ok")
	require.Contains(t, out, "I did not understand that")

	code, out, _ = cli("run", "-m", "create a task to call Ann", "-lead-id", "not-a-uuid")
	require.Equal(t, 1, code)
	require.Contains(t, out, "HTTP 400")
	require.Contains(t, out, "/lead_id")

	code, _, errOut = cli("run")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "give a message")

	// brain call: one call to a named tool, validated by the brain first.
	code, out, _ = cli("call", "os.create_note", `{"title": "from the CLI", "kind": "personal"}`)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"status": "succeeded"`)
	code, out, _ = cli("call", "os.create_note", `{"kind": "diary"}`)
	require.Equal(t, 1, code)
	require.Contains(t, out, "HTTP 400")
	require.Contains(t, out, "/title")

	// brain skills import: both test skills, with what was left out.
	code, out, _ = cli("skills", "import", "testdata/skills")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "imported quoting-helper")
	require.Contains(t, out, "imported pdf-notes")
	require.Contains(t, out, "note: quote.mark_sent: left out, allowed-tools does not list it")
	code, _, errOut = cli("skills", "import", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no SKILL.md")

	// brain lore ingest: one lore.ingest call per Markdown or text file; a second run changes nothing.
	lore := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(lore, "towns"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lore, "towns", "riverton.md"), []byte("# Riverton\n\nA mill town on the Ash river, famous for slate roofs."), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lore, "guilds.txt"), []byte("The Roofers' Guild meets on the first moon of spring."), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lore, "ignored.json"), []byte("{}"), 0o644))
	code, out, _ = cli("lore", "ingest", lore, "-collection", "world")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "towns/riverton.md: created, version 1")
	require.Contains(t, out, "2 of 2 files ingested")
	code, out, _ = cli("lore", "ingest", lore, "-collection", "world")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "towns/riverton.md: unchanged")

	// brain run -M plan, then brain approve: the plan runs once.
	code, out, _ = cli("run", "-M", "plan", "-m", "create a task to approve from the CLI", "-json")
	require.Equal(t, 0, code, out)
	var planned brain.RunResponse
	require.NoError(t, json.Unmarshal([]byte(out), &planned))
	require.Equal(t, brain.RunPlanned, planned.Status)
	code, out, _ = cli("approve", planned.RunID.String(), "-wait", "-timeout", "20s")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Created task “approve from the CLI”")
	code, out, _ = cli("approve", planned.RunID.String())
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "HTTP 409")

	// brain receipt CALL_ID -wait: the call and its receipt.
	code, out, _ = cli("call", "os.create_note", `{"title": "for brain receipt", "kind": "business"}`, "-wait", "0s")
	require.Equal(t, 0, code, out)
	var made struct {
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &made))
	code, out, _ = cli("receipt", made.Call.ID, "-wait", "20s")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"status": "succeeded"`)
	code, _, errOut = cli("receipt")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "usage: brain receipt")

	// help: every command and variable, exit 0.
	code, out, _ = cli("--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"brain approve", "brain receipt", "GEM_BRAIN_TOKEN_FILE", "GEM_LLM_MODEL", "DATABASE_URL"} {
		require.Contains(t, out, want)
	}
	code, _, _ = cli("run", "-h")
	require.Equal(t, 0, code)

	env["GEM_BRAIN_TOKEN"] = "wrong-token-0123456789"
	code, out, errOut = cli("run", "-m", "health check")
	require.Equal(t, 1, code)
	require.Contains(t, out, "unauthorized")
	require.Contains(t, errOut, "used: $GEM_BRAIN_TOKEN")

	env["GEM_BRAIN_URL"] = "http://127.0.0.1:1"
	code, _, errOut = cli("run", "-m", "health check")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "error calling the brain")
}

func TestTokenLookup(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	require.Equal(t, "flag", brainToken("flag", none))
	require.Equal(t, "env", brainToken("", func(k string) string { return map[string]string{"GEM_BRAIN_TOKEN": "env"}[k] }))
	require.Equal(t, "first", brainToken("", func(k string) string { return map[string]string{"GEM_BRAIN_TOKENS": "a:first,b:second"}[k] }))
	require.Equal(t, "http://127.0.0.1:9999", brainURL("", func(k string) string { return map[string]string{"GEM_BRAIN_ADDR": "127.0.0.1:9999"}[k] }))
	require.Equal(t, "http://"+api.AddrDefault, brainURL("", none))

}

// TestHelpNamesEveryVariable: `brain help` lists every environment variable the brain reads.
func TestHelpNamesEveryVariable(t *testing.T) {
	t.Parallel()
	getenvRe := regexp.MustCompile(`getenv\("([A-Z_]+)"\)`)
	envConstRe := regexp.MustCompile(`Env\w+\s*=\s*"([A-Z_]+)"`)
	var names []string
	for _, file := range []string{"config.go", "main.go", "../../../llmconfig/llmconfig.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range getenvRe.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
		for _, m := range envConstRe.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
	}
	require.Greater(t, len(names), 15)
	for _, name := range names {
		require.Contains(t, usage, name, "brain help names %s", name)
	}
}
