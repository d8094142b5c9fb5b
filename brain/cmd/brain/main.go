// Command brain is GEM's brain: an HTTP service that plans tool calls, and a CLI that talks to it. `brain
// help` lists its commands, flags and environment variables. Main wires the service together; the CLI's
// commands are in commands.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/api"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// usage names the packs' tools by their contracts' constants.
var usage = `brain: GEM's brain, an HTTP service that plans tool calls, and a CLI that talks to it.

usage:
  brain serve [-migrate]                  serve the HTTP API until SIGINT/SIGTERM
  brain run -m MESSAGE [flags]            ask the brain; exits 0 when ok, 1 otherwise
  brain chat AGENT MESSAGE [-session ID] [-user ID] [-key K] [-json]
                                          send an agent a message, printing the turn's events as they
                                          come, then its reply; -session goes on with a conversation
  brain approve RUN_ID [-wait] [-timeout 30s|30000]
                                          run a plan stored with -M plan (its author's, or any with
                                          approve; the calls run with no more than you hold)
  brain tools [WORDS...] [-limit N] [-agent SLUG [-user ID]]
                                          the registry's tools, or the best of them for a request in words
  brain calls [-tool T] [-status S] [-caller C] [-agent A] [-device D] [-since 1h] [-limit N] [-cursor C]
                                          calls, newest first
  brain runs [RUN_ID] [-status S] [-mode M] [-agent A] [-caller C] [-limit N]
                                          runs, newest first, or one run and its answer
  brain receipt CALL_ID [-wait 30s]       print a call and its receipt (waiting up to -wait for it)
  brain call TOOL [INPUT_JSON] [-wait 30s] [-key IDEMPOTENCY_KEY] [-device NAME [-device-wait 30s]]
                                          make one call to a named tool and print its receipt
  brain devices [list [NAME]] | add NAME [-owner WHO] [-grant P,P] | grant NAME -grant P,P
               | remove NAME | token NAME
                                          list devices, or add one (printing its token; -grant bounds the
                                          permissions its tools may declare, default *), change that,
                                          remove one, or give one a new token (docs/devices.md)
  brain callers [list [NAME]] | add NAME -grant P,P [-agents A,B] [-note TEXT]
               | grant NAME [-grant P,P] [-agents A,B|*] [-note TEXT] | revoke NAME | token NAME | enable NAME
                                          who may call what: list callers, add one (a token, printed
                                          once; or sql:ROLE for a database role), change or revoke
                                          one, give one a new token, bring a revoked one back with a
                                          new token (admin; docs/governance.md)
  brain approvals [list] | approve CALL_ID [-reason TEXT] | reject CALL_ID -reason TEXT
                                          calls awaiting a decision, and deciding one (approve)
  brain skills import DIR...              import skill folders in the Agent Skills format (SKILL.md and its files)
  brain lore ingest DIR [-collection NAME]
                                          ingest Markdown and text files with ` + agentskillspack.LoreIngest + `
  brain eval [-suite S] [-split S] [-json] [-llm [MODEL]]... [-runs N]
                                          score tool selection against the suites in evals/ and hold
                                          evals/thresholds.yaml (reads DATABASE_URL; docs/evals.md); the
                                          chat suite talks to the configured LLM with -llm (twice: two
                                          models side by side; -runs: each case N times), and is skipped
                                          without
  brain eval -from-receipts [-since 7d]   draft eval cases from where agents stumbled (evals/drafts)
  brain mcp [-agent SLUG] [-as NAME]      serve MCP over stdio (the brain's /mcp for a local host; reads
                                          the database settings below, logs to stderr); -as names an
                                          existing caller [stdio, which may do everything]
  brain version                           print the version
  brain help                              print this help ("brain COMMAND -h" lists a command's flags)

brain run flags (GEM's CLI flags work as they are; -x and --x are the same):
  -m, --message MESSAGE
                      the message (or give it as the remaining arguments)
  -M, --mode MODE     answer, plan, enqueue or enqueue_and_wait (default enqueue_and_wait)
  --lead-id, --job-id, --quote-id ID
                      context ids merged into the planned calls' inputs
  --context KEY=VALUE more context (repeatable)
  --conversation ID   conversation id
  -t, --timeout T     how long to wait for receipts: milliseconds (30000, as GEM's CLI has it) or a
                      duration (30s); 1s..2m, default 30s
  --max-calls N       most tool calls to plan (1..50; default 10)
  --key K             your key for the request: a retry with it answers the same run (one is made up when
                      none is given, so a try the brain could not answer is sent again)
  --json              print the JSON response

every client command also takes:
  -json               print the API's JSON answer (GET /openapi.json describes every answer) instead of
                      columns and lines
  -url URL            the brain (default $GEM_BRAIN_URL, else http://$GEM_BRAIN_ADDR, else http://127.0.0.1:8088)
  -token TOKEN        bearer token (default $GEM_BRAIN_TOKEN, else the first of $GEM_BRAIN_TOKENS, else the
                      first token in .gem/brain-token, looked up in the working folder and its parents)

brain serve reads (defaults in brackets):
  DATABASE_URL                     PostgreSQL URL (required)
  GEM_DATABASE_SESSION_URL         PostgreSQL URL for the listeners when DATABASE_URL is a pooler in
                                   transaction mode [DATABASE_URL]
  GEM_REGISTRY                     registry file [tools.registry.json, in the working folder or a parent]
  GEM_BRAIN_ADDR                   listen address [127.0.0.1:8088]
  GEM_BRAIN_TOKENS                 bearer tokens, comma-separated, each name:token or token; each is a
                                   caller that may do everything until narrowed (brain callers grant)
  GEM_BRAIN_TOKEN_FILE             a file of bearer tokens, one per line (make run writes .gem/brain-token)
  GEM_BRAIN_AUTH                   on or off (off serves without authentication) [on]
  GEM_BRAIN_MAX_BODY               largest request body in bytes [1048576]
  GEM_BRAIN_MAX_IN_FLIGHT          runs, calls, chats, approvals and MCP tool calls served at once; off: no
                                   limit [64, or 3/4 of a larger database pool]
  GEM_BRAIN_MAX_QUEUE              more waiting for a slot; beyond them 503 overloaded; 0: none [4 x in flight]
  GEM_BRAIN_QUEUE_WAIT             longest wait for a slot before 503 overloaded (at most 1m) [2s]
  GEM_BRAIN_HEADER_TIMEOUT         longest time to send a request's headers [10s]
  GEM_BRAIN_BODY_TIMEOUT           longest time to send a request's body; later, 408 and the connection closed [30s]
  GEM_BRAIN_IDLE_TIMEOUT           a kept-alive connection with no request is closed after [2m]
  GEM_BRAIN_MAX_CONNS_PER_CLIENT   connections one address may hold open; more are answered 503; off: none [256]
  GEM_SECRET_KEY                   key sealing secret inputs, 64 hex digits or base64 of 32 bytes (the executors' too)
  GEM_SECRET_KEY_PREVIOUS          keys being rotated out, comma-separated: they still open what they sealed
  GEM_PHONE_REGION                 region of phone numbers without a country code, the executor's too
                                   (GEM_SMS_DEFAULT_COUNTRY_CODE, deprecated, must agree) [AU]
  GEM_BRAIN_TIMEZONE               IANA zone for dates in messages [GEM_BUSINESS_TIMEZONE, else Australia/Sydney]
  GEM_BUSINESS_TIMEZONE            the business's zone, which the executor's tools read dates in [Australia/Sydney]
  GEM_BRAIN_PLANNER                rules or llm [rules]
  GEM_BRAIN_DEFAULT_AGENT          the agent POST /operator/chat talks to [office-assistant]
  GEM_STUDIO_SESSION_TTL           how long a login to the studio (/studio) lasts [8h]
  GEM_STUDIO_INSECURE_COOKIE       leave Secure off the studio's cookie, for plain HTTP off localhost [false]
  GEM_HIGHLEVEL_WEBHOOK_PUBLIC_KEYS  keys HighLevel webhook signatures are checked with [HighLevel's Ed25519 key]
  GEM_HIGHLEVEL_PIPELINE_ID        pipeline whose stage moves become ` + businesspack.UpdateLeadStage + ` [any]
  GEM_HIGHLEVEL_STAGE_IDS          stage=pipeline_stage_id pairs, comma-separated [none: stage moves ignored]
  GEM_BRAIN_TOOL_SEARCH_THRESHOLD  tools above which agents get search_tools/describe_tool [40]
  GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE  share of a request the best tool must hold, or no tool fits (0 to 1) [0.14]
  GEM_BRAIN_CHAT_WAIT_TIMEOUT      wait for one chat iteration's receipts [30s]
  GEM_BRAIN_MAX_TOOL_CALLS_PER_TURN  tool calls one LLM answer may make; the rest are refused [50]
  GEM_BRAIN_CHAT_TEXT_INTERVAL     how often, at most, the text an LLM streams is written as a run's text event [100ms]
  GEM_BRAIN_RUN_LEASE              a chat turn's lease: another brain takes it over this long after its brain died [5s]
  GEM_BRAIN_DB_AWAY_WAIT           how long a chat turn's write waits for the database to come back before 503 [30s]
  GEM_MCP_CALL_WAIT                how long an MCP tools/call waits for its receipt before answering pending [25s]
  GEM_DEVICE_HEARTBEAT             how often devices heartbeat to this hub [5s]
  GEM_DEVICE_MISSED_HEARTBEATS     heartbeats a device may miss before it is dead [3]
  GEM_LLM_PROVIDER                 openai or anthropic [openai]
  GEM_LLM_BASE_URL                 the LLM API's base URL [the provider's]
  GEM_LLM_API_KEY                  the LLM API key
  GEM_LLM_MODEL                    the default model (required for an LLM)
  GEM_LLM_MAX_TOKENS               bound on each answer [4096 for anthropic, the server's for openai]
  GEM_LLM_TIMEOUT                  bound on one LLM request (one attempt) [60s]
  GEM_LLM_STEP_TIMEOUT             bound on one LLM step, all its attempts and waits [3 × GEM_LLM_TIMEOUT]
  GEM_LLM_RETRY_AFTER_MAX          longest provider Retry-After waited for; longer ends the step with 503 [10s]
  GEM_DB_CONNECT_WAIT              how long start-up waits for the database [1m]
  GEM_BRAIN_METRICS                on or off: count and serve /metrics (docs/observability.md) [on]
  GEM_METRICS_TOKEN                a bearer token that opens /metrics and nothing else [none: a caller's token]
  OTEL_EXPORTER_OTLP_ENDPOINT      OTLP/HTTP collector for traces, e.g. http://127.0.0.1:4318 [none: no traces]
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  full OTLP/HTTP traces URL (overrides the one above)
  OTEL_TRACES_EXPORTER             otlp or none [otlp when an endpoint is set]
  OTEL_EXPORTER_OTLP_PROTOCOL      http/protobuf or http/json [http/protobuf]
  OTEL_SERVICE_NAME                service.name of the brain's spans [gem-brain]
  OTEL_TRACES_SAMPLER              sampler, with OTEL_TRACES_SAMPLER_ARG [parentbased_always_on]
  GEM_LOG_LEVEL                    debug, info, warn or error [info]
  GEM_LOG_FORMAT                   json or console [json]
`

func main() {
	os.Exit(cli(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// cli runs one command line and returns its exit status.
func cli(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], getenv, stderr)
	case "run":
		return runMessage(args[1:], getenv, stdout, stderr)
	case "chat":
		return chatMessage(args[1:], getenv, stdout, stderr)
	case "call":
		return callTool(args[1:], getenv, stdout, stderr)
	case "devices":
		return devicesCommand(args[1:], getenv, stdout, stderr)
	case "callers":
		return callersCommand(args[1:], getenv, stdout, stderr)
	case "approvals":
		return approvalsCommand(args[1:], getenv, stdout, stderr)
	case "approve":
		return approveRun(args[1:], getenv, stdout, stderr)
	case "receipt":
		return showReceipt(args[1:], getenv, stdout, stderr)
	case "tools":
		return toolsCommand(args[1:], getenv, stdout, stderr)
	case "calls":
		return callsCommand(args[1:], getenv, stdout, stderr)
	case "runs":
		return runsCommand(args[1:], getenv, stdout, stderr)
	case "skills":
		if len(args) < 2 || args[1] != "import" {
			fmt.Fprintln(stderr, "usage: brain skills import DIR...")
			return 2
		}
		return importSkills(args[2:], getenv, stdout, stderr)
	case "eval":
		return evalCommand(args[1:], getenv, stdout, stderr)
	case "mcp":
		return serveMCP(args[1:], getenv, os.Stdin, stdout, stderr)
	case "lore":
		if len(args) < 2 || args[1] != "ingest" {
			fmt.Fprintln(stderr, "usage: brain lore ingest DIR [-collection NAME]")
			return 2
		}
		return ingestLore(args[2:], getenv, stdout, stderr)
	case "version":
		if len(args) > 1 && strings.TrimLeft(args[1], "-") == "json" {
			_ = json.NewEncoder(stdout).Encode(map[string]string{"version": brain.Version})
			return 0
		}
		fmt.Fprintln(stdout, brain.Version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "brain: unknown command %q%s\n(brain help lists every command)\n", args[0], didYouMean("brain ", args[0], commands))
		return 2
	}
}

// commands are the brain's commands, for suggesting one after a typo.
var commands = []string{"serve", "run", "chat", "call", "calls", "runs", "tools", "receipt", "approve", "approvals", "devices", "callers",
	"skills", "lore", "eval", "mcp", "version", "help"}

// didYouMean suggests the candidate nearest to word ("; did you mean brain tools?"), or "" when none is close:
// a few typos away, or starting with it.
func didYouMean(prefix, word string, candidates []string) string {
	word = strings.ToLower(strings.TrimLeft(word, "-"))
	best, bestDist := "", 0
	for _, c := range candidates {
		d := registry.EditDistance(word, c)
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			d = min(d, 1)
		}
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist > max(2, len(word)/3) {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

func serve(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	migrate := fs.Bool("migrate", false, "apply migrations before serving")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	log, err := gemlog.New(stderr, "brain", getenv("GEM_LOG_LEVEL"), getenv("GEM_LOG_FORMAT"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	zerolog.DefaultContextLogger = &log
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		log.Error().Err(err).Msg("invalid configuration")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &Main{Config: cfg, Log: log, Migrate: *migrate}
	if err := m.Open(ctx); err != nil {
		log.Error().Err(err).Msg("brain did not start")
		return 1
	}
	<-ctx.Done()
	stop()
	log.Info().Msg("stopping")
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(closeCtx); err != nil {
		log.Error().Err(err).Msg("brain did not stop cleanly")
		return 1
	}
	return 0
}

type keyValues map[string]any

func (kv keyValues) String() string { return fmt.Sprint(map[string]any(kv)) }

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return errors.New("use key=value")
	}
	kv[k] = v
	return nil
}

func runMessage(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		message      string
		mode         string
		timeout      = waitFlag(30 * time.Second)
		leadID       = fs.String("lead-id", "", "context: lead id")
		jobID        = fs.String("job-id", "", "context: job id")
		quoteID      = fs.String("quote-id", "", "context: quote id")
		conversation = fs.String("conversation", "", "conversation id")
		maxCalls     = fs.Int("max-calls", 0, "most tool calls to plan (1..50; default 10)")
		asJSON       = fs.Bool("json", false, "print the JSON response")
		follow       = fs.Bool("follow", false, "answer at once and print the run's events as they come, then its answer")
		key          = fs.String("key", "", "your key for this request: a retry with it answers the same run (one is made up when none is given, so a try the brain could not answer is sent again)")
		url          = fs.String("url", "", "brain URL")
		token        = fs.String("token", "", "bearer token")
	)
	// GEM's CLI names, long and short, for the same settings.
	for _, name := range []string{"m", "message"} {
		fs.StringVar(&message, name, "", "the message (required)")
	}
	for _, name := range []string{"M", "mode"} {
		fs.StringVar(&mode, name, string(brain.ModeEnqueueAndWait), "mode: answer, plan, enqueue or enqueue_and_wait")
	}
	for _, name := range []string{"t", "timeout"} {
		fs.Var(&timeout, name, "how long to wait for receipts: milliseconds (30000) or a duration (30s); 1s..2m")
	}
	ctxVals := keyValues{}
	fs.Var(ctxVals, "context", "context key=value (repeatable)")
	words, err := parseInterleaved(fs, args) // brain run list urgent tasks -t 10s: the flags after the words too
	if err != nil {
		return flagExit(err)
	}
	if message == "" {
		message = strings.Join(words, " ")
	}
	if strings.TrimSpace(message) == "" {
		fmt.Fprintln(stderr, `brain run: give a message with -m "..."`)
		return 2
	}
	for k, v := range map[string]string{"lead_id": *leadID, "job_id": *jobID, "quote_id": *quoteID} {
		if v != "" {
			ctxVals[k] = v
		}
	}
	if *key == "" {
		*key = "cli-run-" + uuid.NewString() // sent again while the brain cannot answer, it is the same run
	}
	req := &brain.RunParams{Message: message, Mode: brain.Mode(mode), ConversationID: *conversation, IdempotencyKey: *key,
		Limits: &brain.Limits{MaxToolCalls: *maxCalls, WaitTimeoutMS: int(time.Duration(timeout).Milliseconds())}}
	if len(ctxVals) > 0 {
		req.Context = ctxVals
	}
	client := newCLIClient(*url, *token, getenv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeout)+15*time.Second)
	defer cancel()
	req.Async = *follow
	resp, status, err := client.Run(ctx, req)
	if err != nil {
		fmt.Fprintln(stderr, "brain run:", err)
		return 1
	}
	if *follow && status == http.StatusAccepted {
		events := stdout
		if *asJSON {
			events = stderr // stdout is the answer's JSON
		}
		if err := client.FollowRun(ctx, resp.RunID.String(), 0, func(e api.Event) error { printEvent(events, e); return nil }); err != nil {
			fmt.Fprintln(stderr, "brain run:", err)
			return 1
		}
		if resp, status, err = client.GetRun(ctx, resp.RunID.String()); err != nil {
			fmt.Fprintln(stderr, "brain run:", err)
			return 1
		}
		fmt.Fprintln(events)
	}
	printRun(stdout, stderr, resp, status, *asJSON, client.tokenSource)
	if resp.OK && status < 300 {
		return 0
	}
	return 1
}

// waitFlag is a wait given in milliseconds (GEM's CLI: -t 30000) or as a duration (30s).
type waitFlag time.Duration

func (w *waitFlag) String() string { return time.Duration(*w).String() }

func (w *waitFlag) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		*w = waitFlag(time.Duration(ms) * time.Millisecond)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither milliseconds (30000) nor a duration (30s)", s)
	}
	*w = waitFlag(d)
	return nil
}

func brainURL(flagValue string, getenv func(string) string) string {
	switch {
	case flagValue != "":
		return flagValue
	case getenv("GEM_BRAIN_URL") != "":
		return getenv("GEM_BRAIN_URL")
	case getenv("GEM_BRAIN_ADDR") != "":
		return "http://" + getenv("GEM_BRAIN_ADDR")
	}
	return "http://" + api.AddrDefault
}

// findToken finds the token — the flag, $GEM_BRAIN_TOKEN, the first of $GEM_BRAIN_TOKENS, or the local token
// `make run` writes to .gem/brain-token (looked up in the working folder and its parents) — and says where it
// came from ("" when nowhere).
func findToken(flagValue string, getenv func(string) string) (token, source string) {
	if flagValue != "" {
		return flagValue, "-token"
	}
	if t := getenv("GEM_BRAIN_TOKEN"); t != "" {
		return t, "$GEM_BRAIN_TOKEN"
	}
	if ts := api.ParseTokens(getenv("GEM_BRAIN_TOKENS"), ","); len(ts) > 0 {
		return ts[0].Value, "$GEM_BRAIN_TOKENS"
	}
	if path, err := registry.Find(filepath.Join(".gem", "brain-token")); err == nil {
		if data, err := os.ReadFile(path); err == nil {
			if ts := api.ParseTokens(string(data), "\n"); len(ts) > 0 {
				return ts[0].Value, path
			}
		}
	}
	return "", ""
}

// printRun prints a run's answer, as JSON or for a person, with a hint after a refused token (from tokenSource).
func printRun(stdout, stderr io.Writer, resp *brain.RunResponse, status int, asJSON bool, tokenSource string) {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(resp)
	} else {
		printHuman(stdout, resp, status)
	}
	tokenHint(stderr, status, tokenSource)
}

func printHuman(w io.Writer, resp *brain.RunResponse, status int) {
	mark := "ok"
	if !resp.OK {
		mark = "NOT OK"
	}
	head := fmt.Sprintf("%s (HTTP %d)", mark, status)
	if resp.RunID.String() != "00000000-0000-0000-0000-000000000000" {
		head += fmt.Sprintf("  run %s  %s", resp.RunID, resp.Status)
		if resp.Decision.Planner != "" {
			head += fmt.Sprintf("  [%s, %s", resp.Decision.Mode, resp.Decision.Planner)
			if len(resp.Decision.Rules) > 0 {
				head += ": " + strings.Join(resp.Decision.Rules, ", ")
			}
			head += "]"
		}
	}
	fmt.Fprintln(w, head)
	if resp.AssistantMessage != "" {
		fmt.Fprintln(w)
		fmt.Fprintln(w, resp.AssistantMessage)
	}
	if len(resp.Receipts) > 0 {
		fmt.Fprintln(w, "\ncalls:")
		for _, r := range resp.Receipts {
			line := fmt.Sprintf("  %-24s %-14s %s  %.1f ms", r.ToolName, r.Status, r.CallID, r.DurationMS)
			if r.IdempotencyHit {
				line += "  (idempotency hit)"
			}
			fmt.Fprintln(w, line)
		}
	}
	for _, id := range resp.Pending {
		fmt.Fprintf(w, "  pending %s\n", id)
	}
	if len(resp.Errors) > 0 {
		fmt.Fprintln(w, "\nerrors:")
		for _, e := range resp.Errors {
			fmt.Fprintf(w, "  %s: %s\n", e.Code, e.Message)
			if d, ok := e.Details.(map[string]any); ok {
				if vs, ok := d["violations"].([]any); ok {
					for _, v := range vs {
						if vm, ok := v.(map[string]any); ok {
							fmt.Fprintf(w, "    %v: %v\n", vm["path"], vm["message"])
						}
					}
				}
			}
		}
	}
	if len(resp.NextActions) > 0 {
		fmt.Fprintln(w, "\nnext:")
		for _, a := range resp.NextActions {
			fmt.Fprintf(w, "  - %s\n", a)
		}
	}
}
