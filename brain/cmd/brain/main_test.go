package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
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
	require.Contains(t, out, "Created task “call John” (high priority, due")
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
	require.Contains(t, out, "/context/lead_id")

	// GEM's flags: --message, --mode, --lead-id, -t in milliseconds, --max-calls.
	lead := "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"
	code, out, _ = cli("run", "--message", "create a task to call Ann back", "--mode", "answer", "--lead-id", lead, "-t", "5000", "--json")
	require.Equal(t, 0, code, out)
	require.NoError(t, json.Unmarshal([]byte(out), &resp))
	require.Equal(t, brain.ModeAnswer, resp.Decision.Mode)
	require.JSONEq(t, `{"title": "call Ann back", "domain": "business", "priority": "normal", "context_ref": {"type": "lead", "id": "`+lead+`"}}`, string(resp.PlannedToolCalls[0].Input))
	code, out, _ = cli("run", "-m", "create a task to a\ncreate a task to b", "--max-calls", "1")
	require.Equal(t, 1, code)
	require.Contains(t, out, "max_tool_calls (1)")

	code, _, errOut = cli("run")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "give a message")

	// brain call: one call to a named tool, validated by the brain first.
	code, out, _ = cli("call", "os.create_note", `{"domain": "personal", "title": "from the CLI", "content": "written by brain call"}`)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `^succeeded  os.create_note  call [0-9a-f-]{36}  [0-9.]+ ms\nresult: \{.*"note_id":`, out)
	code, out, _ = cli("call", "os.create_note", `{"domain": "personal", "title": "from the CLI", "content": "written by brain call -json"}`, "-json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"status": "succeeded"`)
	code, out, _ = cli("call", "os.create_note", `{"domain": "diary"}`)
	require.Equal(t, 1, code)
	require.Contains(t, out, "HTTP 400")
	require.Contains(t, out, "/domain")

	// brain skills import: both test skills, with what was left out.
	code, out, _ = cli("skills", "import", "testdata/skills")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "imported quoting-helper")
	require.Contains(t, out, "imported pdf-notes")
	require.Contains(t, out, "note: quote.mark_sent: left out, allowed-tools does not list it")
	code, out, _ = cli("skills", "import", "testdata/skills", "-json")
	require.Equal(t, 0, code, out)
	require.True(t, json.Valid([]byte(out)), out)
	require.Contains(t, out, `"slug": "quoting-helper"`)
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
	code, out, _ = cli("lore", "ingest", lore, "-collection", "world", "-json")
	require.Equal(t, 0, code, out)
	require.True(t, json.Valid([]byte(out)), out)
	require.Contains(t, out, `"file": "towns/riverton.md"`)

	// brain run -M plan, then brain approve: the plan runs once.
	code, out, _ = cli("run", "-M", "plan", "-m", "create a task to approve from the CLI", "-json")
	require.Equal(t, 0, code, out)
	var planned brain.RunResponse
	require.NoError(t, json.Unmarshal([]byte(out), &planned))
	require.Equal(t, brain.RunPlanned, planned.Status)
	code, out, _ = cli("approve", planned.RunID.String(), "-wait", "-timeout", "20000")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Created task “approve from the CLI”")
	code, out, _ = cli("approve", planned.RunID.String())
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "HTTP 409")

	// brain receipt CALL_ID -wait: the call and its receipt.
	code, out, _ = cli("call", "os.create_note", `{"domain": "business", "title": "for brain receipt", "content": "x"}`, "-wait", "0s", "-json")
	require.Equal(t, 0, code, out)
	var made struct {
		Call struct {
			ID string `json:"id"`
		} `json:"call"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &made))
	code, out, _ = cli("receipt", made.Call.ID, "-wait", "20s")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "succeeded  os.create_note  call "+made.Call.ID)
	code, out, _ = cli("receipt", made.Call.ID, "-json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"status": "succeeded"`)
	code, _, errOut = cli("receipt")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "usage: brain receipt")

	// help: every command and variable, exit 0.
	code, out, _ = cli("--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"brain approve", "brain receipt", "GEM_BRAIN_TOKEN_FILE", "GEM_LLM_MODEL", "DATABASE_URL",
		"-m, --message", "-M, --mode", "--lead-id, --job-id, --quote-id", "-t, --timeout", "--max-calls"} {
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
	token := func(flagValue string, getenv func(string) string) string {
		token, _ := findToken(flagValue, getenv)
		return token
	}
	require.Equal(t, "flag", token("flag", none))
	require.Equal(t, "env", token("", func(k string) string { return map[string]string{"GEM_BRAIN_TOKEN": "env"}[k] }))
	require.Equal(t, "first", token("", func(k string) string { return map[string]string{"GEM_BRAIN_TOKENS": "a:first,b:second"}[k] }))
	require.Equal(t, "http://127.0.0.1:9999", brainURL("", func(k string) string { return map[string]string{"GEM_BRAIN_ADDR": "127.0.0.1:9999"}[k] }))
	require.Equal(t, "http://"+api.AddrDefault, brainURL("", none))

}

// TestHelpNamesEveryVariable: `brain help` lists every environment variable the brain reads.
func TestHelpNamesEveryVariable(t *testing.T) {
	t.Parallel()
	getenvRe := regexp.MustCompile(`getenv\("([A-Z_]+)"\)`)
	envConstRe := regexp.MustCompile(`Env\w+\s*=\s*"([A-Z_]+)"`)
	var names []string
	for _, file := range []string{"config.go", "main.go", "../../../llmconfig/llmconfig.go", "../../../registry/phone/phone.go"} {
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

// TestCLIGEMFlags checks, against a brain that records what it is sent, that each of GEM's CLI flags (and
// ours) sets its part of the request.
func TestCLIGEMFlags(t *testing.T) {
	t.Parallel()
	var got []map[string]any
	var mu sync.Mutex
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true, "run_id": "` + uuid.NewString() + `", "status": "completed", "decision": {"mode_used": "answer", "reason": "r"},
			"planned_tool_calls": [], "enqueued": [], "receipts": [], "assistant_message": "fine", "next_actions": [], "errors": []}`))
	}))
	t.Cleanup(fake.Close)
	getenv := func(k string) string {
		return map[string]string{"GEM_BRAIN_URL": fake.URL, "GEM_BRAIN_TOKEN": token}[k]
	}
	run := func(args ...string) map[string]any {
		t.Helper()
		var out, errOut bytes.Buffer
		require.Equal(t, 0, cli(append([]string{"run"}, args...), getenv, &out, &errOut), out.String()+errOut.String())
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1]
	}
	const lead, job, quote = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f", "9d0e5b0f-1c39-4a35-8c8f-6b1f1b7f3a10"
	for _, tt := range []struct {
		name string
		args []string
		want map[string]any
	}{
		{"-m", []string{"-m", "health check"}, map[string]any{"message": "health check", "mode": "enqueue_and_wait", "limits": map[string]any{"wait_timeout_ms": 30000.0}}},
		{"--message", []string{"--message", "health check"}, map[string]any{"message": "health check"}},
		{"words after the flags", []string{"-M", "answer", "list", "my", "tasks"}, map[string]any{"message": "list my tasks", "mode": "answer"}},
		{"-M", []string{"-m", "x", "-M", "plan"}, map[string]any{"mode": "plan"}},
		{"--mode", []string{"-m", "x", "--mode", "enqueue"}, map[string]any{"mode": "enqueue"}},
		{"--lead-id", []string{"-m", "x", "--lead-id", lead}, map[string]any{"context": map[string]any{"lead_id": lead}}},
		{"--job-id", []string{"-m", "x", "--job-id", job}, map[string]any{"context": map[string]any{"job_id": job}}},
		{"--quote-id", []string{"-m", "x", "--quote-id", quote}, map[string]any{"context": map[string]any{"quote_id": quote}}},
		{"all three ids and --context", []string{"-m", "x", "--lead-id", lead, "--job-id", job, "--quote-id", quote, "--context", "invoice_id=abc"},
			map[string]any{"context": map[string]any{"lead_id": lead, "job_id": job, "quote_id": quote, "invoice_id": "abc"}}},
		{"-t in milliseconds", []string{"-m", "x", "-t", "5000"}, map[string]any{"limits": map[string]any{"wait_timeout_ms": 5000.0}}},
		{"--timeout in milliseconds", []string{"-m", "x", "--timeout", "90000"}, map[string]any{"limits": map[string]any{"wait_timeout_ms": 90000.0}}},
		{"--timeout as a duration", []string{"-m", "x", "--timeout", "10s"}, map[string]any{"limits": map[string]any{"wait_timeout_ms": 10000.0}}},
		{"--max-calls", []string{"-m", "x", "--max-calls", "3"}, map[string]any{"limits": map[string]any{"max_tool_calls": 3.0, "wait_timeout_ms": 30000.0}}},
		{"--conversation", []string{"-m", "x", "--conversation", "c-1"}, map[string]any{"conversation_id": "c-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := run(tt.args...)
			for k, v := range tt.want {
				require.Equal(t, v, body[k], "%s in %v", k, body)
			}
			if _, ok := tt.want["context"]; !ok {
				require.NotContains(t, body, "context")
			}
		})
	}

	var out, errOut bytes.Buffer
	require.Equal(t, 2, cli([]string{"run", "-m", "x", "-t", "soon"}, getenv, &out, &errOut))
	require.Contains(t, errOut.String(), `"soon" is neither milliseconds (30000) nor a duration (30s)`)
	require.Equal(t, 2, cli([]string{"run", "--max-calls", "many", "-m", "x"}, getenv, &out, &errOut))
}
