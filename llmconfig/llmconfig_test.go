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
	// A step is three requests' worth unless set; a provider's Retry-After is waited for up to 10 s.
	require.Equal(t, 15*time.Second, c.WithDefaults().StepTimeout)
	require.Equal(t, 10*time.Second, c.WithDefaults().RetryAfterMax)

	env["GEM_LLM_STEP_TIMEOUT"], env["GEM_LLM_RETRY_AFTER_MAX"] = "40s", "2s"
	c, err = llmconfig.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 40*time.Second, c.WithDefaults().StepTimeout)
	require.Equal(t, 2*time.Second, c.WithDefaults().RetryAfterMax)

	env = map[string]string{"GEM_LLM_PROVIDER": "gemini", "GEM_LLM_MAX_TOKENS": "-1", "GEM_LLM_TIMEOUT": "soon",
		"GEM_LLM_STEP_TIMEOUT": "0s", "GEM_LLM_RETRY_AFTER_MAX": "later"}
	_, err = llmconfig.FromEnv(func(k string) string { return env[k] })
	problems := llmconfig.Problems(err)
	require.Len(t, problems, 5, "one problem per variable")
	for i, name := range []string{"GEM_LLM_PROVIDER", "GEM_LLM_MAX_TOKENS", "GEM_LLM_TIMEOUT", "GEM_LLM_STEP_TIMEOUT", "GEM_LLM_RETRY_AFTER_MAX"} {
		require.ErrorContains(t, err, name)
		require.ErrorContains(t, problems[i], name)
	}
	require.Empty(t, llmconfig.Problems(nil))
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
