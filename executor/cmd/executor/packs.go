package main

import (
	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/agentskills"
	"github.com/gemhq/gem/executor/business"
	"github.com/gemhq/gem/executor/integrations"
)

// packs are the tool packs built into this executor, with their settings. They are read from the
// environment once, here, before anything starts: no pack reads the environment itself.
type packs struct {
	business     business.Config
	agentSkills  agentskills.Config
	integrations integrations.Config
}

// packsFromEnv reads every pack's settings through getenv.
func packsFromEnv(getenv func(string) string) packs {
	return packs{
		business:     business.ConfigFromEnv(getenv),
		agentSkills:  agentskills.ConfigFromEnv(getenv),
		integrations: integrations.ConfigFromEnv(getenv),
	}
}

// handlers are the packs' tool handlers.
func (p packs) handlers() executor.Handlers {
	h := executor.Handlers{}
	business.Register(h, p.business)
	agentskills.Register(h, p.agentSkills)
	integrations.Register(h, p.integrations)
	return h
}
