package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// apiTools is where make api-tools installs the OpenAPI linter and client generator (npm).
const apiTools = "../../../scripts/api-tools"

// apiTool is the path of one of api-tools' programs; the test fails (never skips) when it is missing.
func apiTool(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(apiTools, "node_modules", ".bin", name))
	require.NoError(t, err)
	_, err = os.Stat(path)
	require.NoError(t, err, "%s is missing: run make api-tools (make test does)", name)
	return path
}

// openAPIDoc fetches the shared brain's description, without a token: it is public.
func openAPIDoc(t *testing.T) []byte {
	t.Helper()
	resp, err := http.Get(shared.url + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	return body
}

type openAPIOperation struct {
	OperationID string         `json:"operationId"`
	RequestBody map[string]any `json:"requestBody"`
	Responses   map[string]struct {
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
	Security *[]map[string]any `json:"security"`
}

type openAPIDocument struct {
	OpenAPI    string                                 `json:"openapi"`
	Paths      map[string]map[string]openAPIOperation `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// TestOpenAPIDescribesEveryRoute: GET /openapi.json (public) describes every route the brain's router has —
// the studio's pages aside, HTML for browsers — and no route it does not have; every operation has its own
// id; each request body's schema is the one the brain validates with (a request it refuses for its schema
// is refused by the described schema too).
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	var doc openAPIDocument
	require.NoError(t, json.Unmarshal(openAPIDoc(t), &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)

	param := regexp.MustCompile(`:([a-z_]+)`)
	registered := map[string]bool{}
	for _, r := range shared.brain.Server.Routes() {
		if r.Path == "/studio" || strings.HasPrefix(r.Path, "/studio/") {
			continue
		}
		registered[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	described := map[string]bool{}
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			described[key] = true
			require.NotEmpty(t, op.OperationID, key)
			require.Empty(t, ids[op.OperationID], "%s and %s share the operationId %s", ids[op.OperationID], key, op.OperationID)
			ids[op.OperationID] = key
		}
	}
	var undescribed, unregistered []string
	for k := range registered {
		if !described[k] {
			undescribed = append(undescribed, k)
		}
	}
	for k := range described {
		if !registered[k] {
			unregistered = append(unregistered, k)
		}
	}
	require.Empty(t, undescribed, "routes the description leaves out")
	require.Empty(t, unregistered, "described routes the brain does not serve")
	require.Greater(t, len(described), 50, "every route of the API, MCP, devices and metrics included")
	for _, k := range []string{"GET /mcp", "POST /mcp", "GET /devices/connect", "GET /metrics", "GET /openapi.json", "GET /", "GET /favicon.ico"} {
		require.True(t, described[k], k)
	}
	require.NotNil(t, doc.Paths["/openapi.json"]["get"].Security, "the description is public")
	require.Empty(t, *doc.Paths["/openapi.json"]["get"].Security)
	require.Nil(t, doc.Paths["/brain/run"]["post"].Security, "the API's routes take the document's bearer security")

	// One source: the described RunRequest is the schema the brain checks /brain/run with. A body it refuses
	// (an unknown field, a lead_id that is no UUID) fails the described schema too, and one it takes passes.
	schema, err := registry.CompileSchema("described run request", doc.Components.Schemas["RunRequest"])
	require.NoError(t, err)
	a := newAPI(t)
	for _, body := range []string{`{"message": "list my tasks", "moed": "answer"}`, `{"message": "x", "context": {"lead_id": "nope"}}`, `{"mode": "answer"}`} {
		var e errorResponse
		require.Equal(t, http.StatusBadRequest, a.do(http.MethodPost, "/brain/run", body, &e), body)
		require.Error(t, schema.Validate([]byte(body)), body)
	}
	require.NoError(t, schema.Validate([]byte(`{"message": "list my tasks", "mode": "answer"}`)))
	for name, op := range map[string]string{"ChatRequest": "/agents/{slug}/chat", "CallRequest": "/calls", "SkillImportRequest": "/skills/import"} {
		body, _ := json.Marshal(doc.Paths[op]["post"].RequestBody)
		require.Contains(t, string(body), `"#/components/schemas/`+name+`"`, op)
	}
}

// TestOpenAPILint: Redocly's linter (recommended-strict: every warning is an error) finds nothing wrong in the
// description, examples checked against their schemas included; and it does find a broken one, so the lint
// can fail.
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	redocly := apiTool(t, "redocly")
	config, err := filepath.Abs(filepath.Join(apiTools, "redocly.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	lint := func(doc []byte) (string, error) {
		path := filepath.Join(dir, uuid.NewString()+".json")
		require.NoError(t, os.WriteFile(path, doc, 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, redocly, "lint", "--config", config, path)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	doc := openAPIDoc(t)
	out, err := lint(doc)
	require.NoError(t, err, out)
	require.Contains(t, out, "valid", out)

	// A response example that breaks its own schema, and an operation that names a schema nobody defines.
	broken := bytes.Replace(doc, []byte(`"#/components/schemas/RunRequest"`), []byte(`"#/components/schemas/NoSuchRequest"`), 1)
	require.NotEqual(t, doc, broken)
	out, err = lint(broken)
	require.Error(t, err, "the linter passed a description with a dangling $ref:\n%s", out)
	require.Contains(t, out, "NoSuchRequest", out)
}

// TestOpenAPIClient generates a TypeScript client from the description (openapi-typescript), compiles it with
// a program that uses it (tsc, strict), and runs the program (node, openapi-fetch) against the running brain
// with its real PostgreSQL and executor: it asks for a task (POST /brain/run), reads the run back (GET
// /brain/runs/{id}), lists calls and gets GEM's error shape for a bad request. The program also asks for a
// mode the description does not have, which tsc must refuse: the generated types are the description's.
func TestOpenAPIClient(t *testing.T) {
	t.Parallel()
	gen, tsc, node := apiTool(t, "openapi-typescript"), apiTool(t, "tsc"), "node"
	modules, err := filepath.Abs(filepath.Join(apiTools, "node_modules"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(modules, filepath.Join(dir, "node_modules")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "openapi.json"), openAPIDoc(t), 0o644))
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GEM_BRAIN_URL="+shared.url, "GEM_BRAIN_TOKEN="+testToken, "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
		return string(out)
	}
	run(gen, "openapi.json", "-o", "gem.d.ts")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(`{"compilerOptions": {"target": "es2022", "module": "nodenext",
		"moduleResolution": "nodenext", "strict": true, "skipLibCheck": true, "outDir": "out"}, "files": ["client.ts"]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.ts"), []byte(clientProgram), 0o644))
	run(tsc, "-p", ".")

	// Without the @ts-expect-error line's error, tsc refuses the program: the types are checked.
	loose := strings.Replace(clientProgram, `{ message: "x", mode: "sometimes" }`, `{ message: "x", mode: "answer" }`, 1)
	require.NotEqual(t, clientProgram, loose)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.ts"), []byte(loose), 0o644))
	cmd := exec.Command(tsc, "-p", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "tsc accepted an unused @ts-expect-error: the generated types check nothing\n%s", out)
	require.Contains(t, string(out), "Unused '@ts-expect-error' directive", string(out))

	var got struct {
		RunStatus  int    `json:"runStatus"`
		OK         bool   `json:"ok"`
		RunID      string `json:"runId"`
		Status     string `json:"status"`
		Tools      []string
		ReadID     string `json:"readId"`
		ReadStatus string `json:"readStatus"`
		Calls      int    `json:"calls"`
		BadStatus  int    `json:"badStatus"`
		BadCode    string `json:"badCode"`
		BadPointer string `json:"badPointer"`
	}
	stdout := run(node, filepath.Join("out", "client.js"))
	require.NoError(t, json.Unmarshal([]byte(stdout[strings.LastIndex(stdout, "\n{")+1:]), &got), stdout)
	require.Equal(t, http.StatusOK, got.RunStatus, stdout)
	require.True(t, got.OK, stdout)
	require.Equal(t, "completed", got.Status, stdout)
	require.Equal(t, []string{"os.create_task"}, got.Tools)
	require.Equal(t, got.RunID, got.ReadID)
	require.Equal(t, "completed", got.ReadStatus)
	require.GreaterOrEqual(t, got.Calls, 1)
	require.Equal(t, http.StatusBadRequest, got.BadStatus)
	require.Equal(t, "invalid", got.BadCode)
	require.Equal(t, "/context/lead_id", got.BadPointer)
	var n int
	require.NoError(t, shared.pool.QueryRow(context.Background(), `SELECT count(*) FROM core_tool_receipts r JOIN core_tool_calls c ON c.id = r.call_id
		WHERE c.run_id = $1 AND r.status = 'succeeded'`, got.RunID).Scan(&n))
	require.Equal(t, 1, n, "the generated client's run made its call, with its receipt")
}

// clientProgram uses the generated types through openapi-fetch, as a TypeScript user of GEM would.
const clientProgram = `import createClient from "openapi-fetch";

declare const process: { env: Record<string, string | undefined> };
import type { paths } from "./gem.js";

const gem = createClient<paths>({
  baseUrl: process.env.GEM_BRAIN_URL,
  headers: { Authorization: "Bearer " + process.env.GEM_BRAIN_TOKEN },
});

const run = await gem.POST("/brain/run", {
  body: { message: "create a task to call the generated client back, urgent", mode: "enqueue_and_wait" },
  headers: { "Idempotency-Key": "ts-" + Date.now() },
});
if (!run.data) throw new Error("POST /brain/run: " + JSON.stringify(run.error));
const answer = run.data;
if (!("receipts" in answer)) throw new Error("POST /brain/run answered 202, not the run");

const read = await gem.GET("/brain/runs/{id}", { params: { path: { id: answer.run_id } } });
if (!read.data || !("run_id" in read.data)) throw new Error("GET /brain/runs/{id}: " + JSON.stringify(read.error));

const calls = await gem.GET("/calls", { params: { query: { tool: "os.create_task", limit: 5 } } });
if (!calls.data) throw new Error("GET /calls: " + JSON.stringify(calls.error));

// @ts-expect-error: the description's modes are answer, plan, enqueue and enqueue_and_wait, so the types refuse "sometimes".
await gem.POST("/brain/run", { body: { message: "x", mode: "sometimes" } });

const bad = await gem.POST("/brain/run", { body: { message: "create a task to x", context: { lead_id: "nope" } } });
const violation = (bad.error?.errors[0]?.details as { violations?: { path: string }[] } | undefined)?.violations?.[0];

console.log("\n" + JSON.stringify({
  runStatus: run.response.status,
  ok: answer.ok,
  runId: answer.run_id,
  status: answer.status,
  tools: answer.receipts?.map((r) => r.tool) ?? [],
  readId: read.data.run_id,
  readStatus: read.data.status,
  calls: calls.data.calls?.length ?? 0,
  badStatus: bad.response.status,
  badCode: bad.error?.errors[0]?.code,
  badPointer: violation?.path,
}));
`

// TestOpenAPIAnswers: the brain's real answers match the schemas the description gives them — derived from
// the Go types the brain answers with, so a field added to one is described at once.
func TestOpenAPIAnswers(t *testing.T) {
	t.Parallel()
	raw := openAPIDoc(t)
	var doc openAPIDocument
	require.NoError(t, json.Unmarshal(raw, &doc))
	defs, err := json.Marshal(doc.Components.Schemas)
	require.NoError(t, err)
	check := func(method, path, opPath string, status int, body any) {
		t.Helper()
		a := newAPI(t)
		var answer json.RawMessage
		got := a.do(method, path, body, &answer)
		require.Equal(t, status, got, "%s %s: %s", method, path, answer)
		resp, ok := doc.Paths[opPath][strings.ToLower(method)].Responses[strconv.Itoa(status)]
		require.True(t, ok, "%s %s describes no %d", method, opPath, status)
		sch := resp.Content["application/json"].Schema
		require.NotEmpty(t, sch, "%s %s %d has no JSON schema", method, opPath, status)
		full := `{"$defs": ` + string(defs) + `, "allOf": [` + string(sch) + `]}`
		full = strings.ReplaceAll(full, "#/components/schemas/", "#/$defs/")
		compiled, err := registry.CompileSchema(method+" "+opPath, []byte(full))
		require.NoError(t, err)
		require.NoError(t, compiled.Validate(answer), "%s %s answered what its description refuses:\n%s", method, path, answer)
	}
	a := newAPI(t)
	run := a.runOK(map[string]any{"message": "create a task to check the description, urgent", "mode": "enqueue_and_wait"})
	check(http.MethodPost, "/brain/run", "/brain/run", http.StatusOK, map[string]any{"message": "list my tasks", "mode": "answer"})
	check(http.MethodPost, "/brain/run", "/brain/run", http.StatusBadRequest, map[string]any{"message": "x", "context": map[string]any{"lead_id": "nope"}})
	check(http.MethodGet, "/brain/runs/"+run.RunID.String(), "/brain/runs/{id}", http.StatusOK, nil)
	check(http.MethodGet, "/brain/runs?limit=5", "/brain/runs", http.StatusOK, nil)
	check(http.MethodGet, "/brain/runs/"+uuid.NewString(), "/brain/runs/{id}", http.StatusNotFound, nil)
	check(http.MethodGet, "/calls?limit=5", "/calls", http.StatusOK, nil)
	check(http.MethodGet, "/calls/"+run.Enqueued[0].CallID.String(), "/calls/{id}", http.StatusOK, nil)
	check(http.MethodPost, "/calls", "/calls", http.StatusOK, map[string]any{"tool": "os.create_note", "wait_timeout_ms": 30000,
		"input": map[string]any{"domain": "business", "title": "described", "content": "by the description"}})
	check(http.MethodGet, "/receipts?limit=5", "/receipts", http.StatusOK, nil)
	check(http.MethodGet, "/brain/tools?q=create+a+task", "/brain/tools", http.StatusOK, nil)
	check(http.MethodGet, "/brain/tools", "/brain/tools", http.StatusOK, nil)
	check(http.MethodGet, "/agents", "/agents", http.StatusOK, nil)
	check(http.MethodGet, "/agents/office-assistant", "/agents/{slug}", http.StatusOK, nil)
	check(http.MethodGet, "/skills", "/skills", http.StatusOK, nil)
	check(http.MethodGet, "/callers", "/callers", http.StatusOK, nil)
	check(http.MethodGet, "/devices", "/devices", http.StatusOK, nil)
	check(http.MethodGet, "/approvals", "/approvals", http.StatusOK, nil)
	check(http.MethodPost, "/operator/chat", "/operator/chat", http.StatusOK, map[string]any{"message": "list my tasks"})
	require.True(t, slices.Contains([]int{http.StatusOK, http.StatusServiceUnavailable}, a.do(http.MethodGet, "/health", nil, nil)))
}
