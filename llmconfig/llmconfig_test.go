package llmconfig_test

import (
	"testing"
	"time"

	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GEM_LLM_PROVIDER": " Anthropic ", "GEM_LLM_API_KEY": "k", "GEM_LLM_MODEL": "m",
		"GEM_LLM_MAX_TOKENS": "512", "GEM_LLM_TIMEOUT": "5s"}
	c, err := llmconfig.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, llmconfig.Config{Provider: "anthropic", APIKey: "k", Model: "m", MaxTokens: 512, Timeout: 5 * time.Second}, c)
	require.Equal(t, llmconfig.AnthropicBaseURLDefault, c.WithDefaults().BaseURL)

	env = map[string]string{"GEM_LLM_PROVIDER": "gemini", "GEM_LLM_MAX_TOKENS": "-1", "GEM_LLM_TIMEOUT": "soon"}
	_, err = llmconfig.FromEnv(func(k string) string { return env[k] })
	for _, name := range []string{"GEM_LLM_PROVIDER", "GEM_LLM_MAX_TOKENS", "GEM_LLM_TIMEOUT"} {
		require.ErrorContains(t, err, name)
	}
}

func TestMissing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		cfg     llmconfig.Config
		missing []string
	}{
		{"nothing set", llmconfig.Config{}, []string{"GEM_LLM_API_KEY", "GEM_LLM_MODEL"}},
		{"openai with key and model", llmconfig.Config{APIKey: "k", Model: "m"}, nil},
		{"anthropic without key", llmconfig.Config{Provider: "anthropic", Model: "m"}, []string{"GEM_LLM_API_KEY"}},
		{"a local server needs no key", llmconfig.Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama"}, nil},
		{"the provider's own URL still needs a key", llmconfig.Config{BaseURL: llmconfig.OpenAIBaseURLDefault, Model: "m"}, []string{"GEM_LLM_API_KEY"}},
		{"unknown provider", llmconfig.Config{Provider: "gemini", APIKey: "k", Model: "m"}, []string{"GEM_LLM_PROVIDER"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.missing, tt.cfg.Missing())
			require.Equal(t, tt.missing == nil, tt.cfg.Configured())
		})
	}
}
