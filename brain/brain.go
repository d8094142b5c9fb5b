// Package brain is GEM's planner and front door: an HTTP service (and the `brain` CLI) that turns a
// message into tool calls, validates them against the registry, enqueues them as calls in PostgreSQL in
// the same transaction that records the run, waits for their receipts and answers from them. It never runs
// a tool itself: the executor does, and the two meet only in PostgreSQL.
//
// docs/brain.md describes the API, the planners and the configuration.
package brain

// Version is the brain's version, set at build time with -ldflags "-X github.com/gemhq/gem/brain.Version=...".
var Version = "dev"
