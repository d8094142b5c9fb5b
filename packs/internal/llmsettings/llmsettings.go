// Package llmsettings reads GEM_LLM_* for the packs whose tools write text (business, agent skills), so both
// refuse the same settings with the same errors.
package llmsettings

import (
	"errors"

	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry/settings"
)

// FromEnv reads GEM_LLM_* through getenv as llmconfig.FromEnv does, and also refuses a GEM_LLM_BASE_URL that
// is not an http(s) URL: llmconfig leaves the address to the client, and the packs' LLM tools never try one
// no request can reach.
func FromEnv(getenv func(string) string) (llmconfig.Config, error) {
	llm, err := llmconfig.FromEnv(getenv)
	if llm.BaseURL == "" {
		return llm, err
	}
	return llm, errors.Join(append(llmconfig.Problems(err), settings.HTTPURLProblem(llmconfig.EnvBaseURL, llm.BaseURL))...)
}
