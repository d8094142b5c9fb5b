# GEM — make run starts everything on a private PostgreSQL; make test runs every test.
#
# Every target that needs a database uses $DATABASE_URL when it is set, and otherwise starts (once) the
# private cluster under .gem/postgres with sql/dev-postgres.sh.

SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/gemhq/gem/executor.Version=$(VERSION) -X github.com/gemhq/gem/brain.Version=$(VERSION)
BIN := $(CURDIR)/bin

# db exports DATABASE_URL for the rest of a recipe line.
db = export DATABASE_URL="$${DATABASE_URL:-$$(sql/dev-postgres.sh start)}" &&

.PHONY: help run test build lint fuzz bench chaos eval migrate registry schema db-start db-stop db-url psql clean mcp-peers agent-clients api-tools gem-contract

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

build: ## build bin/executor, bin/brain and bin/proof
	@mkdir -p $(BIN)
	cd executor && $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/executor ./cmd/executor
	cd brain && $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/brain ./cmd/brain
	cd proof && $(GO) build -o $(BIN)/proof .

# run: scripts/run.sh — checks that the brain's address is free, then a private PostgreSQL (unless
# DATABASE_URL is set), migrations, a local bearer token in .gem/brain-token, and the executor and the brain
# side by side. When either exits the other is stopped and make run fails; Ctrl-C stops both.
run: build ## start PostgreSQL if needed, migrate, and run the executor and the brain (rules planner)
	@BIN=$(BIN) scripts/run.sh

# The proof package (the small chaos run and bench) loads both cores on purpose, so it runs after the other
# packages rather than beside their timing-sensitive tests.
test: lint mcp-peers agent-clients api-tools ## run every test (PostgreSQL, River, fuzz targets briefly) — what CI runs
	@$(db) \
	GEM_STUDIO_SCREENSHOTS=$(CURDIR)/.gem/studio-screenshots $(GO) test -count=1 -timeout 15m $$($(GO) list work | grep -v '/proof$$') && \
	$(GO) test -count=1 -timeout 10m ./proof/ && \
	$(MAKE) --no-print-directory fuzz FUZZTIME=150000x BRAIN_FUZZTIME=

# mcp-peers: the real MCP peers the tests talk to (the official Inspector CLI, the TypeScript SDK's client and
# the reference server-everything), pinned by scripts/mcp-peers/package-lock.json, and the official tasks client
# (@modelcontextprotocol/ext-tasks on the TypeScript SDK v2), pinned by scripts/mcp-tasks-client/package-lock.json
# in a folder of its own (it needs the SDK's v2 packages). Node and npm are all it needs.
MCP_PEERS := scripts/mcp-peers
MCP_TASKS_CLIENT := scripts/mcp-tasks-client
mcp-peers: ## install the MCP Inspector, the TypeScript SDK, server-everything and the tasks client the tests run against (npm)
	@if [ ! -x $(MCP_PEERS)/node_modules/.bin/mcp-inspector ] || [ ! -x $(MCP_PEERS)/node_modules/.bin/mcp-server-everything ] || \
		[ ! -f $(MCP_PEERS)/node_modules/@modelcontextprotocol/sdk/package.json ]; then \
		echo "installing the MCP test peers into $(MCP_PEERS)/node_modules (npm ci)"; \
		npm ci --no-audit --no-fund --loglevel=error --prefix $(MCP_PEERS); \
	fi
	@if [ ! -f $(MCP_TASKS_CLIENT)/node_modules/@modelcontextprotocol/ext-tasks/package.json ] || \
		[ ! -f $(MCP_TASKS_CLIENT)/node_modules/@modelcontextprotocol/client/package.json ]; then \
		echo "installing the MCP tasks client into $(MCP_TASKS_CLIENT)/node_modules (npm ci)"; \
		npm ci --no-audit --no-fund --loglevel=error --prefix $(MCP_TASKS_CLIENT); \
	fi

# agent-clients: the agent frameworks the tests drive GEM with — the OpenAI Agents SDK, the Vercel AI SDK's MCP
# client and LangChain.js's MCP adapters (brain/cmd/brain/agent_clients_test.go) — pinned by
# scripts/agent-clients/package-lock.json. Node and npm are all it needs.
AGENT_CLIENTS := scripts/agent-clients
agent-clients: ## install the agent frameworks the tests drive GEM with: OpenAI Agents SDK, Vercel AI SDK, LangChain.js (npm)
	@if [ ! -f $(AGENT_CLIENTS)/node_modules/@openai/agents/package.json ] || [ ! -f $(AGENT_CLIENTS)/node_modules/@ai-sdk/mcp/package.json ] || \
		[ ! -f $(AGENT_CLIENTS)/node_modules/@langchain/mcp-adapters/package.json ]; then \
		echo "installing the agent frameworks into $(AGENT_CLIENTS)/node_modules (npm ci)"; \
		npm ci --no-audit --no-fund --loglevel=error --prefix $(AGENT_CLIENTS); \
	fi

# api-tools: what the tests check the brain's OpenAPI description (/openapi.json) with — Redocly's linter, and
# openapi-typescript, openapi-fetch and TypeScript, which generate a client from it, compile it and call a
# running brain — pinned by scripts/api-tools/package-lock.json. Node and npm are all it needs.
API_TOOLS := scripts/api-tools
api-tools: ## install the OpenAPI linter and client generator the tests check /openapi.json with (npm)
	@if [ ! -x $(API_TOOLS)/node_modules/.bin/redocly ] || [ ! -x $(API_TOOLS)/node_modules/.bin/openapi-typescript ] || [ ! -x $(API_TOOLS)/node_modules/.bin/tsc ]; then \
		echo "installing the OpenAPI linter and client generator into $(API_TOOLS)/node_modules (npm ci)"; \
		npm ci --no-audit --no-fund --loglevel=error --prefix $(API_TOOLS); \
	fi

# gem-contract: the original GEM's registry is not in the repository (a clone has no ../shared); its contract
# is, as facts only (no description or title text) plus hashes of its prose's 5-word runs, in
# registry/gemcontract/testdata, which every test that holds us to GEM's contract reads. Re-running it on the
# same file changes nothing.
GEM_CONTRACT_SOURCE ?= ../shared/gem/tools.registry.json
gem-contract: ## regenerate registry/gemcontract/testdata from GEM's registry (GEM_CONTRACT_SOURCE)
	$(GO) run ./registry/gemcontract/cmd/gem-contract -from $(GEM_CONTRACT_SOURCE) -to registry/gemcontract/testdata

# make test gives the fuzzers a count of inputs rather than a duration: a duration's deadline races Go 1.26's
# fuzzing coordinator (go.dev/issue/75804) and can fail a run that found nothing.
FUZZTIME ?= 30s
BRAIN_FUZZTIME ?= $(FUZZTIME)
fuzz: ## run each fuzz target for FUZZTIME (a duration like 30s, or a count like 100000x)
	cd registry && $(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 .
	cd registry && $(GO) test -run '^$$' -fuzz '^FuzzValidateInput$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 .
	@# The brain's fuzz targets build all of the brain with coverage (~1.5 min on 2 cores each): make test runs
	@# their seeds (with their packages' tests) and leaves the fuzzing to make fuzz. FuzzMCP drives a real brain's
	@# /mcp and a `brain mcp` process, with an executor, on the tests' PostgreSQL.
	$(if $(BRAIN_FUZZTIME),cd brain && $(GO) test -run '^$$' -fuzz '^FuzzRequestBodies$$' -fuzztime $(BRAIN_FUZZTIME) -fuzzminimizetime 0 ./api/)
	$(if $(BRAIN_FUZZTIME),cd brain && $(GO) test -run '^$$' -fuzz '^FuzzMCP$$' -fuzztime $(BRAIN_FUZZTIME) -fuzzminimizetime 0 ./cmd/brain/)

# bench: the bare River floor, GEM's executor and the brain (latency, sequential and open loop), drain
# throughput and peak memory, printed as one table (and .gem/bench.json); then the Go benchmarks of the hot
# in-process pieces. BENCH_FLAGS passes flags to bin/proof bench (e.g. -repeats 1 -only gem). BASELINE names a
# repository folder with another build in its bin/ (git worktree add ../gem-before REV && make -C ../gem-before
# build): its /brain/run and chat turn are measured alternating with this build's, in the same run.
bench: build ## measure GEM against bare River: latency, throughput, memory (docs/benchmarks.md)
	@$(db) mkdir -p .gem && \
	$(BIN)/proof bench -bin $(BIN) -json .gem/bench.json $(if $(BASELINE),-baseline $(BASELINE)) $(BENCH_FLAGS) && \
	echo && echo "Go benchmarks of the hot in-process pieces:" && \
	$(GO) test -run '^$$' -bench . -benchmem ./registry/ ./sql/gemsql/ ./executor/ ./brain/

# chaos: always on a private cluster of its own (it restarts the server), never on DATABASE_URL.
# CHAOS_FLAGS passes flags to bin/proof chaos (e.g. -calls 20000 -kill-every 1s).
chaos: build ## 10,000 calls and 24 chat sessions while executors, devices and brains are SIGKILLed and PostgreSQL restarts; exits 1 on any lost or doubled call or turn
	@$(BIN)/proof chaos -bin $(BIN) $(CHAOS_FLAGS)

# lint also keeps binaries out of git: a tracked (or staged) file git diffs as binary (a NUL byte in its first
# 8000 bytes, as in every compiled program) fails it. Build output goes to bin/ (ignored); see .gitignore.
lint: ## gofmt, go vet, and no binary files tracked by git
	@out=$$(git diff --cached --numstat $$(git hash-object -t tree /dev/null) | awk -F'\t' '$$1 == "-" {print "  " $$3}'); \
	if [ -n "$$out" ]; then echo "git tracks binary files (build output belongs in bin/, which is ignored):"; echo "$$out"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet work

# eval: brain eval over evals/ (docs/evals.md) on a migrated database. EVAL_FLAGS passes flags (-suite search,
# -split held_out, -json, -llm).
eval: migrate ## score this build's tool selection against the suites in evals/ and hold evals/thresholds.yaml
	@$(db) $(BIN)/brain eval $(EVAL_FLAGS)

migrate: build ## apply River's and GEM's migrations
	@$(db) $(BIN)/executor migrate

registry: ## write tools.registry.json from the packs' entries (packs/*/tools/*.json; a test fails when it is not current)
	@cd packs && $(GO) test -count=1 -run '^TestRegistryIsGenerated$$' . -update-registry

schema: ## write sql/schema.sql, the schema every migration leaves (a test fails when it is not current)
	@$(db) cd sql/gemsql && $(GO) test -count=1 -run '^TestSchemaMatchesMigrations$$' . -update-schema

db-start: ## start the private PostgreSQL and print its URL
	@sql/dev-postgres.sh start

db-stop: ## stop the private PostgreSQL
	@sql/dev-postgres.sh stop

db-url: ## print the private PostgreSQL's URL
	@sql/dev-postgres.sh url

psql: ## open psql on the database
	@$(db) psql "$$DATABASE_URL"

clean: ## remove build output (the database stays; sql/dev-postgres.sh destroy removes it)
	rm -rf $(BIN)
