// Package executor runs GEM's tool calls. It is a River worker: every core_tool_calls row becomes a River
// job (by the row's insert trigger), and for each job the executor looks the tool up, validates the input,
// enforces the tool's idempotency mode, runs the handler under the tool's timeout and writes exactly one
// receipt, committing the receipt, the call's status, the handler's database effects and the job's
// completion in one transaction. Calls that finish together share a transaction (each in its own
// savepoint), which is what lets one executor commit thousands of calls a second.
//
// The executor has no public API: it talks to the brain only through PostgreSQL. docs/architecture.md
// describes the design and docs/adding-a-tool.md how to write a Handler. This package is the tool author's
// surface (package gemcall, by its names here) and the process; the engine is executor/internal/engine.
package executor
