package integrations

import "time"

// Backoff exposes HighLevelConfig.backoff to the tests.
func Backoff(cfg HighLevelConfig, attempts int, retryAfter time.Duration) time.Duration {
	return cfg.backoff(attempts, retryAfter)
}
