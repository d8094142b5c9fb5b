package main

import (
	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	agentskillshandlers "github.com/gemhq/gem/packs/agentskills/handlers"
	businesspack "github.com/gemhq/gem/packs/business"
	businesshandlers "github.com/gemhq/gem/packs/business/handlers"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationshandlers "github.com/gemhq/gem/packs/integrations/handlers"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/rs/zerolog"
)

// packs are the tool packs built into this executor, with their settings. They are read from the
// environment once, here, before anything starts: no pack reads the environment itself.
type packs struct {
	os           ospack.Config
	business     businesspack.Config
	agentSkills  agentskillspack.Config
	integrations integrationspack.Config
}

// packsFromEnv reads every pack's settings through getenv.
func packsFromEnv(getenv func(string) string) packs {
	return packs{
		os:           ospack.ConfigFromEnv(getenv),
		business:     businesspack.ConfigFromEnv(getenv),
		agentSkills:  agentskillspack.ConfigFromEnv(getenv),
		integrations: integrationspack.ConfigFromEnv(getenv),
	}
}

// handlers are the packs' tool handlers.
func (p packs) handlers() executor.Handlers {
	h := executor.Handlers{}
	businesshandlers.RegisterWithOS(h, p.os, p.business)
	agentskillshandlers.Register(h, p.agentSkills)
	integrationshandlers.Register(h, p.integrations, p.business)
	return h
}

// problems are the settings that are set but cannot be used, each error naming its variable. A setting two
// packs read (GEM_LLM_*, read by the business and agent skills packs) is listed once. GEM_BUSINESS_TIMEZONE
// is the os pack's alone (the business pack is given it), GEM_PHONE_REGION the business pack's alone (the
// integrations pack is given the business's Config).
func (p packs) problems() []error {
	var problems []error
	seen := map[string]bool{}
	for _, pack := range [][]error{p.os.Problems(), p.business.Problems(), p.agentSkills.Problems(), p.integrations.Problems()} {
		for _, err := range pack {
			if !seen[err.Error()] {
				seen[err.Error()] = true
				problems = append(problems, err)
			}
		}
	}
	return problems
}

// reportProblems logs a warning for each setting that cannot be used. The executor starts all the same, as
// it always has: a wrong setting keeps only the tools that need it from working (those of the business and
// agent skills packs answer not_configured, naming the variable), not the others.
func (p packs) reportProblems(log zerolog.Logger) {
	for _, err := range p.problems() {
		log.Warn().Err(err).Msg("a tool pack's setting cannot be used: fix it and restart the executor (executor registry check lists them)")
	}
}
