package integrationshandlers

import (
	"time"

	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// Backoff exposes backoff to the tests.
func Backoff(cfg integrationspack.HighLevelConfig, attempts int, retryAfter time.Duration) time.Duration {
	return backoff(cfg, attempts, retryAfter)
}
