package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/brain/mcpserver"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The MCP server is tested with real peers: the official MCP Inspector CLI (scripts/mcp-peers, installed by
// `make mcp-peers`) over streamable HTTP against the brain's /mcp and over stdio against `brain mcp`, and
// the official Go SDK's client where the Inspector cannot say what we check (progress notifications).

// repoRoot is the folder holding go.work, found by walking up from the test's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.work above the test's folder")
		dir = parent
	}
}

// inspectorBinary is the Inspector CLI, failing the test (not skipping it) when it is not installed.
func inspectorBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot(t), "scripts", "mcp-peers", "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the MCP Inspector is not installed (%v): run make mcp-peers", err)
	}
	return bin
}

// inspectorToolError is the Inspector's exit status when a tool answered isError (it prints the result first).
const inspectorToolError = 5

// inspected is what one Inspector run printed and how it exited.
type inspected struct {
	code           int
	stdout, stderr string
}

// result decodes the Inspector's --format json answer ({"result": ...}).
func (r inspected) result(t *testing.T) map[string]any {
	t.Helper()
	var out struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.NotNil(t, out.Result, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return out.Result
}

// inspect runs the Inspector CLI with a home of its own (it keeps catalogs and OAuth state there).
func inspect(t *testing.T, args ...string) inspected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inspectorBinary(t), append([]string{"--cli"}, args...)...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"),
		"MCP_CLIENT_CONFIG_PATH="+filepath.Join(home, "client.json"), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("error running the Inspector: %v\n%s", err, stderr.String())
	}
	return inspected{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// overHTTP are the Inspector's arguments to reach a brain's /mcp with the test token (and headers).
func overHTTP(url string, headers ...string) []string {
	args := []string{"--transport", "http", "--server-url", url + "/mcp", "--format", "json", "--header", "Authorization: Bearer " + testToken}
	for _, h := range headers {
		args = append(args, "--header", h)
	}
	return args
}

var (
	brainBuild    sync.Once
	brainBinPath  string
	brainBuildErr error
)

// brainBinary builds this command once: `brain mcp` is the Inspector's stdio server.
func brainBinary(t testing.TB) string {
	t.Helper()
	brainBuild.Do(func() {
		dir, err := os.MkdirTemp("", "gem-brain-")
		if err != nil {
			brainBuildErr = err
			return
		}
		brainBinPath = filepath.Join(dir, "brain")
		out, err := exec.Command("go", "build", "-o", brainBinPath, ".").CombinedOutput()
		if err != nil {
			brainBuildErr = fmt.Errorf("error building the brain: %v\n%s", err, out)
		}
	})
	require.NoError(t, brainBuildErr)
	return brainBinPath
}

// overStdio are the Inspector's arguments to start `brain mcp` on a database (flags after the command).
func overStdio(t *testing.T, dbURL string, flags ...string) []string {
	return append([]string{"--format", "json", "-e", "DATABASE_URL=" + dbURL, "-e", "GEM_REGISTRY=" + testenv.RegistryPath(),
		"-e", "GEM_LOG_LEVEL=warn", "--"}, append([]string{brainBinary(t), "mcp"}, flags...)...)
}

// toolsOf lists the tools of a tools/list answer by name.
func toolsOf(t *testing.T, res map[string]any) map[string]map[string]any {
	t.Helper()
	list, ok := res["tools"].([]any)
	require.True(t, ok, "%v", res)
	out := map[string]map[string]any{}
	for _, raw := range list {
		tool := raw.(map[string]any)
		out[tool["name"].(string)] = tool
	}
	return out
}

// textOf is a tool result's text.
func textOf(res map[string]any) string {
	var parts []string
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			parts = append(parts, m["text"].(string))
		}
	}
	return strings.Join(parts, "\n")
}

// requireRegistryTools checks a tools/list answer against the registry: every tool (or those of want), each
// under its portable name with GEM's name in its _meta, with its title, description, schemas and the
// annotations the registry derives, and gem.get_receipt.
func requireRegistryTools(t *testing.T, reg *registry.Registry, res map[string]any, want []string) {
	t.Helper()
	tools := toolsOf(t, res)
	own := 1 // gem.get_receipt; and gem.approve when no agent scopes the list
	if want == nil {
		for _, rt := range reg.Tools() {
			want = append(want, rt.Name)
		}
		own = 2
		require.Contains(t, tools, registry.PortableName(mcpserver.ApproveTool))
	}
	require.Len(t, tools, len(want)+own, "the tools and GEM's own")
	require.Contains(t, tools, registry.PortableName(mcpserver.GetReceiptTool))
	for name := range tools {
		require.Regexp(t, registry.PortableNameRe, name, "a name model APIs accept")
	}
	for _, name := range want {
		rt, ok := reg.Tool(name)
		require.True(t, ok, name)
		tool, ok := tools[registry.PortableName(name)]
		require.True(t, ok, "tools/list has %s", name)
		require.Equal(t, map[string]any{"gem/name": name}, tool["_meta"])
		require.Equal(t, llm.ToolTitle(rt), tool["title"])
		require.Equal(t, rt.Description, tool["description"])
		var input, output any
		require.NoError(t, json.Unmarshal(llm.ModelInputSchema(rt.InputSchema), &input))
		require.NoError(t, json.Unmarshal(rt.OutputSchema, &output))
		require.Equal(t, input, tool["inputSchema"], "%s: the registry's input schema as clients that hand it to a model take it", name)
		out := tool["outputSchema"].(map[string]any)
		require.Equal(t, "object", out["type"])
		require.Equal(t, output, out["anyOf"].([]any)[0], "%s: the tool's output, or pending", name)
		a, hints := rt.Annotations(), tool["annotations"].(map[string]any)
		require.Equal(t, map[string]any{"title": llm.ToolTitle(rt), "readOnlyHint": a.ReadOnly, "destructiveHint": a.Destructive,
			"idempotentHint": a.Idempotent, "openWorldHint": a.OpenWorld}, hints, name)
	}
}

// session connects the official Go SDK's client to a brain's /mcp with the test token and extra headers.
func session(t *testing.T, url string, headers map[string]string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gem-test", Version: "1"}, opts)
	registerSkillMethods(t, client)
	h := map[string]string{"Authorization": "Bearer " + testToken}
	for k, v := range headers {
		h[k] = v
	}
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: withHeaders(h)}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// stdioSession starts `brain mcp` with flags and connects the Go SDK's client to it.
func stdioSession(t *testing.T, dbURL string, flags ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(brainBinary(t), append([]string{"mcp"}, flags...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "GEM_REGISTRY="+testenv.RegistryPath(), "GEM_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "gem-test", Version: "1"}, nil)
	registerSkillMethods(t, client)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// withHeaders is a transport adding headers to every request.
type withHeaders map[string]string

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The skills extension's methods, as a client sends them.
type (
	skillsListParams struct {
		mcp.ParamsBase
	}
	skillsListResult struct {
		mcp.ResultBase
		Skills []struct {
			URI       string         `json:"uri"`
			Resources []mcpSkillFile `json:"resources"`
		} `json:"skills"`
	}
	skillsGetParams struct {
		mcp.ParamsBase
		URI string `json:"uri"`
	}
	skillsGetResult struct {
		mcp.ResultBase
		Skill struct {
			URI       string         `json:"uri"`
			Resources []mcpSkillFile `json:"resources"`
		} `json:"skill"`
	}
	mcpSkillFile struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int    `json:"size"`
	}
)

func registerSkillMethods(t *testing.T, c *mcp.Client) {
	require.NoError(t, mcp.AddSendingCustomMethod[*skillsListParams, *skillsListResult](c, "skills/list"))
	require.NoError(t, mcp.AddSendingCustomMethod[*skillsGetParams, *skillsGetResult](c, "skills/get"))
}

func listSkills(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](context.Background(), s, "skills/list", &skillsListParams{})
	require.NoError(t, err)
	var uris []string
	for _, sk := range res.Skills {
		uris = append(uris, sk.URI)
	}
	return uris
}

func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// callOf reads the call a tools/call result names (_meta gem/call_id).
func callOf(t *testing.T, meta any) *gemsql.Call {
	t.Helper()
	var id string
	switch m := meta.(type) {
	case map[string]any:
		id, _ = m["gem/call_id"].(string)
	case mcp.Meta:
		id, _ = m["gem/call_id"].(string)
	}
	require.NotEmpty(t, id, "the result names its call: %v", meta)
	call, err := gemsql.CallGet(context.Background(), shared.pool, uuid.MustParse(id))
	require.NoError(t, err)
	return call
}

// TestMCPInspectorHTTP: the Inspector lists the registry's tools at the brain's /mcp (with no portability
// error), calls them, and sees failures and bad input as tool errors.
func TestMCPInspectorHTTP(t *testing.T) {
	t.Parallel()
	reg := shared.brain.Registry

	t.Run("tools/list --strict", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append(overHTTP(shared.url), "--method", "tools/list", "--strict")...)
		require.Equal(t, 0, r.code, "no error-severity portability problem:\n%s", r.stderr)
		requireRegistryTools(t, reg, r.result(t), nil)
		tools := toolsOf(t, r.result(t))
		require.Equal(t, map[string]any{"title": "Create note (os.create_note)", "readOnlyHint": false, "destructiveHint": false,
			"idempotentHint": false, "openWorldHint": false}, tools["os__create_note"]["annotations"])
		require.Equal(t, true, tools["os__list_tasks"]["annotations"].(map[string]any)["readOnlyHint"])
		require.Equal(t, true, tools["comms__send_sms"]["annotations"].(map[string]any)["destructiveHint"])
		t.Logf("Inspector tools/list --strict (first tool of %d):\n%s", len(tools), firstLines(r.stdout, 600))
	})

	t.Run("tools/call", func(t *testing.T) {
		t.Parallel()
		title := "from the Inspector " + uuid.NewString()[:8]
		r := inspect(t, append(overHTTP(shared.url), "--method", "tools/call", "--tool-name", "os__create_note",
			"--tool-arg", "domain=business", "title="+title, "content=written over MCP")...)
		require.Equal(t, 0, r.code, r.stderr)
		t.Logf("Inspector tools/call os__create_note:\n%s", r.stdout)
		res := r.result(t)
		require.NotEqual(t, true, res["isError"], "%v", res)
		structured := res["structuredContent"].(map[string]any)
		require.NotEmpty(t, structured["note_id"], "%v", structured)
		var text map[string]any
		require.NoError(t, json.Unmarshal([]byte(textOf(res)), &text), "the text is the result's JSON")
		require.Equal(t, structured, text)

		// The receipt is in PostgreSQL, on a call made for the token's name.
		call := callOf(t, res["_meta"])
		require.Equal(t, "tester", call.RequestedBy)
		require.Equal(t, registry.CallSucceeded, call.Status)
		receipt, err := gemsql.ReceiptGet(context.Background(), shared.pool, call.ID)
		require.NoError(t, err)
		require.Equal(t, registry.StatusSucceeded, receipt.Status)
		require.JSONEq(t, mustJSON(t, structured), string(receipt.Result))
		var stored string
		require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT title FROM os_notes WHERE id = $1`, structured["note_id"]).Scan(&stored))
		require.Equal(t, title, stored)
	})

	t.Run("a failed call is a tool error", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append(overHTTP(shared.url), "--method", "tools/call", "--tool-name", "os__complete_task", "--tool-arg", "task_id="+uuid.NewString())...)
		require.Equal(t, inspectorToolError, r.code, r.stderr)
		t.Logf("Inspector tools/call of a failing call:\n%s", r.stdout)
		res := r.result(t)
		require.Equal(t, true, res["isError"], "%v", res)
		structured := res["structuredContent"].(map[string]any)
		require.Equal(t, "failed", structured["status"])
		code := structured["error"].(map[string]any)["code"].(string)
		require.Equal(t, string(registry.CodeNotFound), code, "%v", structured)
		require.Contains(t, textOf(res), "os.complete_task failed")
		require.Contains(t, textOf(res), code+": ")
		receipt, err := gemsql.ReceiptGet(context.Background(), shared.pool, callOf(t, res["_meta"]).ID)
		require.NoError(t, err)
		require.Equal(t, registry.StatusFailed, receipt.Status)
	})

	t.Run("bad input is a tool error naming the violation", func(t *testing.T) {
		t.Parallel()
		title := "never written " + uuid.NewString()[:8]
		r := inspect(t, append(overHTTP(shared.url), "--method", "tools/call", "--tool-name", "os__create_note",
			"--tool-arg", "domain=diary", "title="+title)...)
		require.Equal(t, inspectorToolError, r.code, r.stderr)
		res := r.result(t)
		require.Equal(t, true, res["isError"], "%v", res)
		structured := res["structuredContent"].(map[string]any)
		require.Equal(t, "invalid_arguments", structured["status"])
		e := structured["error"].(map[string]any)
		require.Equal(t, string(registry.CodeValidation), e["code"])
		var paths []string
		for _, v := range e["details"].(map[string]any)["violations"].([]any) {
			paths = append(paths, v.(map[string]any)["path"].(string))
		}
		require.ElementsMatch(t, []string{"/domain", "/content"}, paths)
		require.Contains(t, textOf(res), "/domain: ")
		var calls int
		require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM core_tool_calls WHERE input->>'title' = $1`, title).Scan(&calls))
		require.Zero(t, calls, "nothing was enqueued")
	})

	t.Run("protocol errors and odd arguments", func(t *testing.T) {
		t.Parallel()
		s := session(t, shared.url+"/mcp", nil, nil)
		_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.no_such_tool"})
		require.ErrorContains(t, err, "os.no_such_tool")
		_, err = s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os__no_such_tool"})
		require.ErrorContains(t, err, "os__no_such_tool")
		// Text PostgreSQL cannot store is refused as bad arguments, never a crash.
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.create_note",
			Arguments: map[string]any{"domain": "business", "title": "nul\u0000", "content": "x"}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Equal(t, "invalid_arguments", res.StructuredContent.(map[string]any)["status"])
		// Named where it is, as POST /calls names it: one rule for a client's text (gemsql's text.go).
		require.Contains(t, res.Content[0].(*mcp.TextContent).Text, `/title contains a NUL character (\u0000)`)
		// No arguments at all: every required property is named.
		res, err = s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.create_note"})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "/domain")
	})
}

func firstLines(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestMCPAuth: /mcp takes the brain's bearer tokens; without one the Inspector is refused.
func TestMCPAuth(t *testing.T) {
	t.Parallel()
	r := inspect(t, "--transport", "http", "--server-url", shared.url+"/mcp", "--format", "json", "--stored-auth-only", "--method", "tools/list")
	require.NotEqual(t, 0, r.code, r.stdout)
	require.NotContains(t, r.stdout, "os.create_note")

	body := `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`
	for _, tt := range []struct {
		name, auth, challenge string
	}{
		{"missing", "", `Bearer realm="gem"`},
		{"wrong", "Bearer wrong-token-0123456789", `Bearer realm="gem", error="invalid_token"`},
	} {
		req, err := http.NewRequest(http.MethodPost, shared.url+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, tt.name)
		require.Equal(t, tt.challenge, resp.Header.Get("WWW-Authenticate"), tt.name)
	}
}

// mcpSkill is the SKILL.md the skills tests import: front matter with text YAML could misread.
const mcpSkill = `---
name: %s
description: "Notes: how to keep them # and find them again"
license: Apache-2.0
metadata:
  gem-tools: os.create_note os.search_notes
  version: "1.0"
---

# Notes

Search before writing. See references/guide.md.
`

// skillFiles are the files the skills tests give a skill (as a folder import stores them): a text reference,
// a binary asset with a space in its name, and an empty script.
var mcpSkillFiles = map[string][]byte{
	"references/guide.md":   []byte("# Guide\n\nNotes are searched by words. ✓\n"),
	"assets/logo with.png":  {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00},
	"scripts/empty_hook.sh": {},
}

// importSkillWithFiles imports a skill through the brain's API and stores its files.
func importSkillWithFiles(t *testing.T, url string, pool *pgxpool.Pool, slug string) {
	t.Helper()
	a := &testAPI{t: t, url: url, token: testToken}
	var body map[string]any
	require.Equal(t, http.StatusOK, a.do(http.MethodPost, "/skills/import", map[string]any{"source": slug + "/SKILL.md",
		"content": fmt.Sprintf(mcpSkill, slug)}, &body), "%v", body)
	for path, content := range mcpSkillFiles {
		mediaType := map[string]string{".md": "text/markdown", ".png": "image/png", ".sh": "text/x-shellscript"}[filepath.Ext(path)]
		_, err := pool.Exec(context.Background(), `INSERT INTO skill_files (skill_id, path, content, media_type)
			SELECT id, $2, $3, $4 FROM skills WHERE slug = $1`, slug, path, content, mediaType)
		require.NoError(t, err)
	}
}

// requireVerified checks the Inspector's --verify reports: exit 0, and a verified report for each skill named
// (and for no other when exact).
func requireVerified(t *testing.T, r inspected, exact bool, wantSkills ...string) map[string]any {
	t.Helper()
	require.Equal(t, 0, r.code, "verify failed:\n%s\n%s", r.stdout, r.stderr)
	reports := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var v any
		require.NoError(t, dec.Decode(&v), r.stdout)
		collectReports(v, reports)
	}
	for _, name := range wantSkills {
		report, ok := reports[name].(map[string]any)
		require.True(t, ok, "a report for %s in\n%s", name, r.stdout)
		require.Equal(t, "verified", report["outcome"], "%v", report)
	}
	if exact {
		require.Len(t, reports, len(wantSkills), "%v", reports)
	}
	return reports
}

// collectReports finds the skill reports ({name, outcome, files}) in whatever envelope --verify printed.
func collectReports(v any, into map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		if name, ok := v["name"].(string); ok && v["outcome"] != nil {
			into[name] = v
			return
		}
		for _, m := range v {
			collectReports(m, into)
		}
	case []any:
		for _, m := range v {
			collectReports(m, into)
		}
	}
}

// TestMCPSkillsCatalog: on a brain of its own (so no other test changes the catalog under it), the Inspector
// verifies every skill (built-in and imported, with files) over HTTP and over stdio, gets one and reads a
// file; the Go client reads every file byte for byte.
func TestMCPSkillsCatalog(t *testing.T) {
	t.Parallel()
	pool, dbURL := sqltest.NewDB(t)
	m, err := startBrain(dbURL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	url := m.Server.URL()
	slug := "mcp-notes"
	importSkillWithFiles(t, url, pool, slug)
	var builtin []string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT array_agg(slug ORDER BY slug) FROM skills WHERE is_builtin`).Scan(&builtin))
	require.NotEmpty(t, builtin)
	all := append([]string{slug}, builtin...)
	uri := "skill://" + slug + "/SKILL.md"

	t.Run("skills/list", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append(overHTTP(url), "--method", "skills/list")...)
		require.Equal(t, 0, r.code, r.stderr)
		var entry map[string]any
		for _, s := range r.result(t)["skills"].([]any) {
			if s.(map[string]any)["uri"] == uri {
				entry = s.(map[string]any)
			}
		}
		require.NotNil(t, entry, r.stdout)
		require.Equal(t, map[string]any{"name": slug, "description": "Notes: how to keep them # and find them again", "license": "Apache-2.0",
			"metadata": map[string]any{"gem-tools": "os.create_note os.search_notes", "gem-category": "imported", "version": "1.0"}}, entry["frontmatter"])
		var uris []string
		for _, res := range entry["resources"].([]any) {
			res := res.(map[string]any)
			require.Regexp(t, `^sha256:[0-9a-f]{64}$`, res["digest"])
			require.IsType(t, float64(0), res["size"])
			uris = append(uris, res["uri"].(string))
		}
		require.Equal(t, []string{uri, "skill://" + slug + "/assets/logo%20with.png",
			"skill://" + slug + "/references/guide.md", "skill://" + slug + "/scripts/empty_hook.sh"}, uris)
	})

	t.Run("skills/list --verify over HTTP, modern era", func(t *testing.T) {
		t.Parallel()
		requireVerified(t, inspect(t, append(overHTTP(url), "--protocol-era", "modern", "--method", "skills/list", "--verify")...), true, all...)
	})

	t.Run("skills/list --verify over stdio", func(t *testing.T) {
		t.Parallel()
		requireVerified(t, inspect(t, append([]string{"--method", "skills/list", "--verify"}, overStdio(t, dbURL)...)...), true, all...)
	})

	t.Run("skills/get --verify", func(t *testing.T) {
		t.Parallel()
		reports := requireVerified(t, inspect(t, append(overHTTP(url), "--method", "skills/get", "--uri", uri, "--verify")...), true, slug)
		require.Len(t, reports[slug].(map[string]any)["files"], 4, "SKILL.md and the three files, each checked")
	})

	t.Run("resources/read", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append(overHTTP(url), "--method", "resources/read", "--uri", "skill://"+slug+"/references/guide.md")...)
		require.Equal(t, 0, r.code, r.stderr)
		contents := r.result(t)["contents"].([]any)[0].(map[string]any)
		require.Equal(t, string(mcpSkillFiles["references/guide.md"]), contents["text"])
		require.Equal(t, "text/markdown", contents["mimeType"])
	})

	t.Run("every file byte for byte", func(t *testing.T) {
		t.Parallel()
		s := session(t, url+"/mcp", nil, nil)
		ctx := context.Background()
		got, err := mcp.CallCustomMethod[*skillsGetParams, *skillsGetResult](ctx, s, "skills/get", &skillsGetParams{URI: uri})
		require.NoError(t, err)
		require.Len(t, got.Skill.Resources, 4)
		for _, f := range got.Skill.Resources {
			res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: f.URI})
			require.NoError(t, err, f.URI)
			c := res.Contents[0]
			content := []byte(c.Text)
			if c.Text == "" {
				content = c.Blob
			}
			sum := sha256.Sum256(content)
			require.Equal(t, f.Digest, "sha256:"+hex.EncodeToString(sum[:]), f.URI)
			require.Equal(t, f.Size, len(content), f.URI)
			if path := strings.TrimPrefix(f.URI, "skill://"+slug+"/"); path != "SKILL.md" {
				path = strings.ReplaceAll(path, "%20", " ")
				require.Equal(t, mcpSkillFiles[path], content, path)
			}
		}
		for _, missing := range []string{"skill://" + slug + "/references/missing.md", "skill://no-such-skill/SKILL.md", "skill://" + slug} {
			_, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: missing})
			require.Error(t, err, missing)
		}
		_, err = mcp.CallCustomMethod[*skillsGetParams, *skillsGetResult](ctx, s, "skills/get", &skillsGetParams{URI: "skill://no-such-skill/SKILL.md"})
		require.Error(t, err)
	})
}

// TestMCPAgentScope: a client that names an agent (X-GEM-Agent, ?agent= or `brain mcp -agent`) sees the
// agent's tools and skills only, and its calls are made for the agent.
func TestMCPAgentScope(t *testing.T) {
	t.Parallel()
	reg := shared.brain.Registry
	a := newAPI(t)
	skill := uniq("notes")
	agent := agentWithSkills(t, a, 5, map[string][]string{skill: {"os.create_note", "os.search_notes"}})
	imported := uniq("mcp-notes")
	importSkillWithFiles(t, shared.url, shared.pool, imported)
	var body map[string]any
	require.Equal(t, http.StatusOK, a.do(http.MethodPut, "/agents/"+agent+"/skills/"+imported, nil, &body), "%v", body)
	enabled := []string{"os.create_note", "os.search_notes"}
	skills := []string{"skill://" + skill + "/SKILL.md", "skill://" + imported + "/SKILL.md"}
	header := mcpserver.AgentHeader + ": " + agent

	t.Run("tools/list", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append(overHTTP(shared.url, header), "--method", "tools/list")...)
		require.Equal(t, 0, r.code, r.stderr)
		requireRegistryTools(t, reg, r.result(t), enabled)
		s := session(t, shared.url+"/mcp?agent="+agent, nil, nil)
		require.ElementsMatch(t, []string{"gem__get_receipt", "os__create_note", "os__search_notes"}, toolNames(t, s), "?agent= names the agent too")
	})

	t.Run("calls are made for the agent", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append(overHTTP(shared.url, header), "--method", "tools/call", "--tool-name", "os__create_note",
			"--tool-arg", "domain=personal", "title=for the agent", "content=x")...)
		require.Equal(t, 0, r.code, r.stderr)
		res := r.result(t)
		require.NotEqual(t, true, res["isError"], "%v", res)
		call := callOf(t, res["_meta"])
		require.Equal(t, agent, call.Agent)
		require.Equal(t, "tester", call.UserID)
		require.Equal(t, "tester", call.RequestedBy)

		// A tool the agent's skills do not enable: the executor refuses it, with a receipt.
		s := session(t, shared.url+"/mcp", map[string]string{mcpserver.AgentHeader: agent}, nil)
		out, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.list_tasks"})
		require.NoError(t, err)
		require.True(t, out.IsError)
		require.Equal(t, string(registry.CodeToolNotEnabled), out.StructuredContent.(map[string]any)["error"].(map[string]any)["code"])
		require.Equal(t, registry.CallFailed, callOf(t, out.Meta).Status)
	})

	t.Run("skills", func(t *testing.T) {
		t.Parallel()
		requireVerified(t, inspect(t, append(overHTTP(shared.url, header), "--method", "skills/list", "--verify")...), true, skill, imported)
		s := session(t, shared.url+"/mcp", map[string]string{mcpserver.AgentHeader: agent}, nil)
		require.ElementsMatch(t, skills, listSkills(t, s))
		// A skill the agent does not have is not there to read.
		_, err := s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "skill://notes-tasks/SKILL.md"})
		require.Error(t, err)
		_, err = s.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "skill://" + imported + "/references/guide.md"})
		require.NoError(t, err)
	})

	t.Run("over stdio", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append([]string{"--method", "tools/list"}, overStdio(t, shared.dbURL, "-agent", agent, "-as", "tester")...)...)
		require.Equal(t, 0, r.code, r.stderr)
		requireRegistryTools(t, reg, r.result(t), enabled)
		s := stdioSession(t, shared.dbURL, "-agent", agent, "-as", "tester")
		require.ElementsMatch(t, skills, listSkills(t, s))
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.search_notes", Arguments: map[string]any{"query": "agent"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		call := callOf(t, res.Meta)
		require.Equal(t, agent, call.Agent)
		require.Equal(t, "tester", call.UserID)
	})

	t.Run("an unknown agent is refused", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			url, header string
			status      int
		}{
			{shared.url + "/mcp?agent=no-such-agent", "", http.StatusNotFound},
			{shared.url + "/mcp", "no-such-agent", http.StatusNotFound},
			{shared.url + "/mcp?agent=Not_A_Slug", "", http.StatusBadRequest},
			{shared.url + "/mcp?agent=other", agent, http.StatusBadRequest},
		} {
			req, err := http.NewRequest(http.MethodPost, tt.url, strings.NewReader(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.header != "" {
				req.Header.Set(mcpserver.AgentHeader, tt.header)
			}
			var e errorResponse
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			resp.Body.Close()
			require.Equal(t, tt.status, resp.StatusCode, "%s %s", tt.url, tt.header)
			require.False(t, e.OK)
		}
		cmd := exec.Command(brainBinary(t), "mcp", "-agent", "no-such-agent")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+shared.dbURL, "GEM_REGISTRY="+testenv.RegistryPath())
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		require.Equal(t, 2, exit.ExitCode())
		require.Contains(t, string(out), `no agent \"no-such-agent\"`)
	})
}

// TestMCPInspectorStdio: `brain mcp` lists and calls tools for the Inspector over stdio, recording the caller
// as stdio (or the name -as gives).
func TestMCPInspectorStdio(t *testing.T) {
	t.Parallel()
	reg := shared.brain.Registry
	t.Run("tools/list", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append([]string{"--method", "tools/list", "--strict"}, overStdio(t, shared.dbURL)...)...)
		require.Equal(t, 0, r.code, r.stderr)
		requireRegistryTools(t, reg, r.result(t), nil)
	})
	t.Run("tools/list --strict on GEM's registry", func(t *testing.T) {
		t.Parallel()
		// The original GEM's 105 tools, with GEM's schemas (the repository's extract of its contract, described
		// in our words), pass the Inspector's portability check too.
		doc, err := testenv.GEMRegistryDocument()
		require.NoError(t, err)
		gemPath := filepath.Join(t.TempDir(), "gem.registry.json")
		require.NoError(t, os.WriteFile(gemPath, doc, 0o600))
		gemReg, err := registry.Load(gemPath)
		require.NoError(t, err)
		r := inspect(t, "--method", "tools/list", "--strict", "--format", "json", "-e", "DATABASE_URL="+shared.dbURL,
			"-e", "GEM_REGISTRY="+gemPath, "-e", "GEM_LOG_LEVEL=warn", "--", brainBinary(t), "mcp")
		require.Equal(t, 0, r.code, r.stderr)
		tools := toolsOf(t, r.result(t))
		require.Len(t, tools, gemReg.Len()+2, "GEM's tools, gem.get_receipt and gem.approve")
		t.Logf("Inspector --strict on GEM's registry: %s", firstLines(r.stderr, 300))
	})
	t.Run("tools/call", func(t *testing.T) {
		t.Parallel()
		r := inspect(t, append([]string{"--method", "tools/call", "--tool-name", "os__create_note", "--tool-arg", "domain=personal",
			"title=over stdio", "content=x"}, overStdio(t, shared.dbURL)...)...)
		require.Equal(t, 0, r.code, r.stderr)
		res := r.result(t)
		require.NotEqual(t, true, res["isError"], "%v", res)
		call := callOf(t, res["_meta"])
		require.Equal(t, MCPCallerDefault, call.RequestedBy)
		require.Empty(t, call.Agent)
		require.Equal(t, registry.CallSucceeded, call.Status)
	})
	t.Run("-as", func(t *testing.T) {
		t.Parallel()
		// -as names a caller that exists, with its grants: one that may only read is refused a write.
		_, err := shared.pool.Exec(context.Background(), `SELECT gem_caller_grant('claude-desktop', '{read:db}')`)
		require.NoError(t, err)
		s := stdioSession(t, shared.dbURL, "-as", "claude-desktop")
		res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.health_check"})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		require.Equal(t, "claude-desktop", callOf(t, res.Meta).RequestedBy)
		res, err = s.CallTool(context.Background(), &mcp.CallToolParams{Name: "os.create_note",
			Arguments: map[string]any{"domain": "personal", "title": "no", "content": "x"}})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "permission_denied")
	})
	t.Run("-as an unknown caller", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(brainBinary(t), "mcp", "-as", "nobody-"+uuid.NewString()[:8])
		cmd.Env = append(os.Environ(), "DATABASE_URL="+shared.dbURL, "GEM_REGISTRY="+testenv.RegistryPath())
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", out)
		require.Contains(t, string(out), "no such caller")
	})
}

// TestMCPPending: a call that outlasts the wait answers {call_id, status: pending} (not an error) after
// progress notifications, and gem.get_receipt returns pending again, then the receipt once the call ends.
// The call is held by a row lock the test takes on its task.
func TestMCPPending(t *testing.T) {
	t.Parallel()
	m, err := startBrain(shared.dbURL, func(c *Config) {
		c.MCP = mcpserver.Config{CallWait: 400 * time.Millisecond, ProgressInterval: 100 * time.Millisecond}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	ctx := context.Background()

	var mu sync.Mutex
	var progress []string
	s := session(t, m.Server.URL()+"/mcp", nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		}})

	// The task comes through the shared brain, which waits long enough on a loaded machine.
	res, err := session(t, shared.url+"/mcp", nil, nil).CallTool(ctx, &mcp.CallToolParams{Name: "os.create_task",
		Arguments: map[string]any{"title": "held by a lock", "domain": "business"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	taskID, ok := res.StructuredContent.(map[string]any)["task_id"].(string)
	require.True(t, ok, "%v", res.StructuredContent)

	lock, err := shared.pool.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx)
	_, err = lock.Exec(ctx, `SELECT 1 FROM os_tasks WHERE id = $1 FOR UPDATE`, taskID)
	require.NoError(t, err)

	start := time.Now()
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "os.complete_task", Arguments: map[string]any{"task_id": taskID},
		Meta: mcp.Meta{"progressToken": "complete-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "pending is not an error: %v", res.Content)
	require.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond)
	pending := res.StructuredContent.(map[string]any)
	require.Equal(t, "pending", pending["status"])
	callID := pending["call_id"].(string)
	require.Equal(t, callID, res.Meta["gem/call_id"])
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "gem__get_receipt", "the name it lists")
	mu.Lock()
	require.GreaterOrEqual(t, len(progress), 2, "enqueued, then waiting: %v", progress)
	require.Equal(t, "call "+callID+" enqueued", progress[0])
	require.Contains(t, progress[len(progress)-1], "call "+callID+": running")
	mu.Unlock()

	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": callID}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "pending", res.StructuredContent.(map[string]any)["status"], "still held")

	// Released, the call ends; gem.get_receipt answers pending until it has (each ask waits 400ms).
	require.NoError(t, lock.Rollback(ctx))
	var receipt map[string]any
	require.Eventually(t, func() bool {
		res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": callID}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		receipt = res.StructuredContent.(map[string]any)
		return receipt["status"] != "pending"
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, "succeeded", receipt["status"])
	require.Equal(t, "os.complete_task", receipt["tool"])
	require.Equal(t, callID, receipt["call_id"])
	require.Equal(t, taskID, receipt["result"].(map[string]any)["task_id"])

	// Bad and unknown ids are answered as tool errors.
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": "nope"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "/call_id")
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.GetReceiptTool, Arguments: map[string]any{"call_id": uuid.NewString()}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "not_found", res.StructuredContent.(map[string]any)["status"])
}

// TestMCPConfig: GEM_MCP_CALL_WAIT sets how long a call waits, and nonsense is refused.
func TestMCPConfig(t *testing.T) {
	t.Parallel()
	cfg, err := ConfigFromEnv(func(k string) string { return map[string]string{"GEM_MCP_CALL_WAIT": "3s"}[k] })
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, cfg.MCP.CallWait)
	cfg, err = ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, mcpserver.CallWaitDefault, cfg.MCP.WithDefaults().CallWait)
	for _, bad := range []string{"soon", "-1s", "0s"} {
		_, err = ConfigFromEnv(func(k string) string { return map[string]string{"GEM_MCP_CALL_WAIT": bad}[k] })
		require.ErrorContains(t, err, "GEM_MCP_CALL_WAIT", bad)
	}
	require.ErrorContains(t, Config{DatabaseURL: "postgres://x", AuthDisabled: true, MCP: mcpserver.Config{CallWait: time.Hour}}.WithDefaults().validate(),
		"GEM_MCP_CALL_WAIT")
}
