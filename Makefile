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

.PHONY: help run test build lint fuzz migrate db-start db-stop db-url psql clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

build: ## build bin/executor
	@mkdir -p $(BIN)
	cd executor && $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/executor ./cmd/executor

run: build ## start PostgreSQL if needed, migrate, and run the executor
	@$(db) \
	echo "gem: database $$DATABASE_URL" && \
	$(BIN)/executor migrate && \
	echo "gem: executor running; make a call from another terminal:" && \
	echo "  psql \"$$DATABASE_URL\" -c \"INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_task', '{\\\"title\\\": \\\"call John\\\"}')\"" && \
	echo "  psql \"$$DATABASE_URL\" -c \"SELECT tool_name, status, result FROM core_tool_receipts ORDER BY id DESC LIMIT 5\"" && \
	GEM_LOG_FORMAT=$${GEM_LOG_FORMAT:-console} exec $(BIN)/executor run

test: lint ## run every test (PostgreSQL, River, fuzz targets briefly) — what CI runs
	@$(db) \
	$(GO) test -count=1 -timeout 15m work && \
	$(MAKE) --no-print-directory fuzz FUZZTIME=10s

FUZZTIME ?= 30s
fuzz: ## run each fuzz target for FUZZTIME (default 30s)
	cd registry && $(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 .
	cd registry && $(GO) test -run '^$$' -fuzz '^FuzzValidateInput$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 .

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet work

migrate: build ## apply River's and GEM's migrations
	@$(db) $(BIN)/executor migrate

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
