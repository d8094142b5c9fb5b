package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRegistryCheck(t *testing.T) {
	t.Parallel()

	var out, errOut bytes.Buffer
	code := run([]string{"registry", "check", "../../../tools.registry.json"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "OK")
	require.Contains(t, out.String(), "leads")
	require.Contains(t, out.String(), "have a handler in this executor")

	out.Reset()
	code = run([]string{"registry", "check", "-json", "../../../tools.registry.json"}, &out, &errOut)
	require.Equal(t, 0, code)
	var summary struct {
		Tools []toolSummary `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &summary))
	require.NotEmpty(t, summary.Tools)
	for _, s := range summary.Tools {
		require.True(t, s.Handler, "%s has a handler", s.Name)
	}

	// A registry with tools this executor cannot run lists them as not_configured.
	out.Reset()
	code = run([]string{"registry", "check", "../../../registry/testdata/varied.registry.json"}, &out, &errOut)
	require.Equal(t, 0, code)
	require.Contains(t, out.String(), "Answer not_configured (no handler here): ai.vision.describe_image")
	require.Contains(t, out.String(), "Handlers for tools this registry lacks")

	broken := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte(`{"version":"1","tools":[{"name":"nodot","description":"x"}]}`), 0o600))
	out.Reset()
	errOut.Reset()
	code = run([]string{"registry", "check", broken}, &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), "tool nodot: field name")
	require.Contains(t, errOut.String(), "tool nodot: field idempotency")

	require.Equal(t, 2, run([]string{"frobnicate"}, &out, &errOut))
}
