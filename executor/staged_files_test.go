package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// storedFiles lists the files of a file store by name (no temporary files).
func storedFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// stagingTool is a Go tool whose handler stages a text file holding its input's name and returns its ref,
// or, for "broken", a result its output schema refuses.
func stagingTool(t *testing.T, store *filestore.Store) (*registry.Registry, executor.Handler) {
	t.Helper()
	reg, err := registry.Parse([]byte(`{"version": "1", "tools": [{"name": "test.staged", "description": "stages a file",
		"input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
		"output_schema": {"type": "object", "required": ["ref"]}, "permissions": ["read:db"],
		"idempotency": {"mode": "safe-retry"}, "timeout_ms": 5000}]}`))
	require.NoError(t, err)
	h := executor.Handler{Run: func(_ context.Context, c *executor.Call) (any, error) {
		var in struct{ Name string }
		if err := c.Bind(&in); err != nil {
			return nil, err
		}
		f, err := store.Prepare(in.Name+".txt", ".txt", "text/plain", []byte(in.Name))
		if err != nil {
			return nil, err
		}
		c.StageFile(f)
		c.StageFile(f) // staged twice, listed once
		if in.Name == "broken" {
			return map[string]any{"no_ref": f.Ref}, nil
		}
		return map[string]any{"ref": f.Ref}, nil
	}}
	return reg, h
}

// TestStagedFiles: a file a handler stages is written once its call succeeded, before the receipt commits,
// and listed in effects.files_written; a call that fails its output schema writes none.
func TestStagedFiles(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	store := filestore.New(t.TempDir())
	reg, h := stagingTool(t, store)
	b.startExecutorWith(t, executor.Config{}, reg, executor.Handlers{"test.staged": h}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	kept := b.call(t, ctx, "test.staged", `{"name": "kept"}`)
	broken := b.call(t, ctx, "test.staged", `{"name": "broken"}`)
	rs := b.wait(t, ctx, kept, broken)
	require.Equal(t, registry.StatusSucceeded, rs[kept].Status)
	require.Len(t, rs[kept].Effects.FilesWritten, 1)
	f := rs[kept].Effects.FilesWritten[0]
	require.JSONEq(t, `{"ref": "`+f.Ref+`"}`, string(rs[kept].Result))
	require.Equal(t, "kept.txt", f.Name)
	data, err := store.Read(f.Ref)
	require.NoError(t, err)
	require.Equal(t, "kept", string(data))
	require.Equal(t, registry.CodeOutputContract, rs[broken].Error.Code)
	require.Empty(t, rs[broken].Effects.FilesWritten)
	require.Len(t, storedFiles(t, store.Dir()), 1, "the call that failed wrote no file")
}

// TestDetachedWritesStagedFiles: a device runs its tools detached (no receipt there): the files a handler
// staged are written to the device's store once the result passed its output schema, and not when it failed.
func TestDetachedWritesStagedFiles(t *testing.T) {
	t.Parallel()
	store := filestore.New(t.TempDir())
	reg, h := stagingTool(t, store)
	tool, _ := reg.Tool("test.staged")
	run := func(name string) executor.DetachedResult {
		return (&executor.Detached{CallID: uuid.New(), Tool: tool, Handler: h, Input: json.RawMessage(`{"name": "` + name + `"}`),
			Log: zerolog.Nop()}).Run(context.Background())
	}
	ok := run("kept")
	require.Nil(t, ok.Error)
	var out struct{ Ref string }
	require.NoError(t, json.Unmarshal(ok.Result, &out))
	data, err := store.Read(out.Ref)
	require.NoError(t, err)
	require.Equal(t, "kept", string(data))
	broken := run("broken")
	require.Equal(t, registry.CodeOutputContract, broken.Error.Code)
	require.Len(t, storedFiles(t, store.Dir()), 1, "a result that failed its schema wrote no file")
}
