package agentskillspack_test

import (
	"testing"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/packs/internal/settingstest"
	"github.com/stretchr/testify/require"
)

// TestConfigProblems: Problems lists each setting that is set but cannot be used, naming its variable (each
// GEM_LLM_* one apart), and nothing for settings that are unset or fine.
func TestConfigProblems(t *testing.T) {
	t.Parallel()
	problems := func(env map[string]string) []string {
		var out []string
		for _, err := range agentskillspack.ConfigFromEnv(func(k string) string { return env[k] }).Problems() {
			out = append(out, err.Error())
		}
		return out
	}
	require.Empty(t, problems(nil))
	require.Empty(t, problems(map[string]string{"GEM_LLM_PROVIDER": "anthropic", "GEM_LLM_TIMEOUT": "5s", "GEM_WEB_SEARCH_PROVIDER": "Brave",
		"GEM_IMAGE_URL": "http://127.0.0.1:1/v1", "GEM_WEB_SEARCH_URL": "http://127.0.0.1:1/search"}))
	require.Equal(t, []string{`GEM_WEB_SEARCH_URL="search.example" is not an http(s) URL`},
		problems(map[string]string{"GEM_WEB_SEARCH_URL": "search.example"}), "a search endpoint every call would fail on")
	require.Equal(t, []string{`GEM_LLM_BASE_URL="localhost:11434/v1" is not an http(s) URL`},
		problems(map[string]string{"GEM_LLM_BASE_URL": "localhost:11434/v1"}), "an LLM API no request can reach")
	require.Equal(t, []string{`GEM_IMAGE_URL="ftp://images.example/v1" is not an http(s) URL`},
		problems(map[string]string{"GEM_IMAGE_URL": "ftp://images.example/v1"}), "an image API no request can reach")

	got := problems(map[string]string{"GEM_LLM_PROVIDER": "gemini", "GEM_LLM_TIMEOUT": "soon", "GEM_WEB_SEARCH_PROVIDER": "altavista",
		"GEM_IMAGE_URL": "images"})
	require.Len(t, got, 4, "%q", got)
	for i, env := range []string{"GEM_LLM_PROVIDER", "GEM_LLM_TIMEOUT", "GEM_WEB_SEARCH_PROVIDER", "GEM_IMAGE_URL"} {
		require.Contains(t, got[i], env)
	}
}

// TestVariables: Variables are what ConfigFromEnv reads, and docs/agent-skills-pack.md lists each with its
// default.
func TestVariables(t *testing.T) {
	t.Parallel()
	settingstest.RequireVariablesRead(t, func(getenv func(string) string) { agentskillspack.ConfigFromEnv(getenv) }, agentskillspack.Variables())
	settingstest.RequireDocumented(t, "../../docs/agent-skills-pack.md", agentskillspack.Variables())
}
