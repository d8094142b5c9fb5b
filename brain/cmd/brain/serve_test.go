package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

const testToken = "test-token-0123456789abcdef"

// shared is the package's database, executor and brain: the tests share them (each works on its own
// rows), so the suite starts one executor process instead of one per test.
var shared struct {
	dbURL string
	pool  *pgxpool.Pool
	brain *Main
	url   string
}

// TestMain runs the tests; they fail when a goroutine outlives them, looked for once the shared executor
// and brain are stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(suite{m})
}

// suite is the tests run between the start and the stop of what they share.
type suite struct{ m *testing.M }

func (s suite) Run() int { return runTests(s.m) }

func runTests(m *testing.M) int {
	flag.Parse()
	env, err := testenv.StartShared(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	defer func() {
		if brainBinPath != "" {
			_ = os.RemoveAll(filepath.Dir(brainBinPath)) // the brain built for tests that run it as a process
		}
	}()
	shared.dbURL = env.DatabaseURL
	shared.brain, err = startBrain(env.DatabaseURL, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer shared.brain.Close(context.Background())
	shared.pool = shared.brain.Pool
	shared.url = shared.brain.Server.URL()
	return m.Run()
}

// startBrain starts a brain on :0; edit changes its config.
func startBrain(dbURL string, edit func(*Config)) (*Main, error) {
	cfg := Config{DatabaseURL: dbURL, RegistryPath: testenv.RegistryPath(), Addr: "127.0.0.1:0",
		Tokens: []api.Token{{Name: "tester", Value: testToken}}}
	if edit != nil {
		edit(&cfg)
	}
	log := zerolog.Nop()
	if testing.Verbose() {
		log = zerolog.New(os.Stderr).Level(zerolog.InfoLevel)
	}
	m := &Main{Config: cfg, Log: log}
	if err := m.Open(context.Background()); err != nil {
		return nil, err
	}
	return m, nil
}

// api makes requests to a brain.
type testAPI struct {
	t     *testing.T
	url   string
	token string
	// brain is the brain the test started for itself, when it did (llmBrainWith, privateBrain).
	brain *Main
}

func newAPI(t *testing.T) *testAPI { return &testAPI{t: t, url: shared.url, token: testToken} }

// do sends a request and decodes the JSON answer into out (when not nil), returning the status.
func (a *testAPI) do(method, path string, body any, out any) int {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewBufferString(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(a.t, err)
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.url+path, r)
	require.NoError(a.t, err)
	req.Header.Set("Content-Type", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	if out != nil {
		require.NoError(a.t, json.Unmarshal(data, out), "body: %s", data)
	}
	return resp.StatusCode
}

// run posts /brain/run.
func (a *testAPI) run(req map[string]any) (*brain.RunResponse, int) {
	a.t.Helper()
	var resp brain.RunResponse
	status := a.do(http.MethodPost, "/brain/run", req, &resp)
	return &resp, status
}

// runOK posts /brain/run and requires 200 and ok.
func (a *testAPI) runOK(req map[string]any) *brain.RunResponse {
	a.t.Helper()
	resp, status := a.run(req)
	require.Equal(a.t, http.StatusOK, status, "%+v", resp.Errors)
	require.True(a.t, resp.OK, "%+v", resp.Errors)
	return resp
}

// getRun reads GET /brain/runs/{id} and requires 200.
func (a *testAPI) getRun(id uuid.UUID) *brain.RunResponse {
	a.t.Helper()
	var resp brain.RunResponse
	require.Equal(a.t, http.StatusOK, a.do(http.MethodGet, "/brain/runs/"+id.String(), nil, &resp))
	return &resp
}

// errorResponse is an error body.
type errorResponse struct {
	OK     bool           `json:"ok"`
	Errors []*brain.Error `json:"errors"`
}
