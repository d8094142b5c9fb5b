package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/deviceagent"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/executor/remote"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/registry/settings"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
)

// runFlags are run's flags.
type runFlags struct {
	migrate  *bool
	registry *string
}

func runFlagSet() (*flag.FlagSet, runFlags) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	return fs, runFlags{
		migrate:  fs.Bool("migrate", false, "apply River's and GEM's migrations before starting"),
		registry: fs.String("registry", "", "registry `FILE` (default $GEM_REGISTRY, else "+registry.DefaultPath+" in the working folder or its parents)"),
	}
}

func historyFlagSet() (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	return fs, fs.Bool("retire", false, "archive and drop the months past GEM_RETENTION now (into GEM_ARCHIVE_DIR), then list what is left")
}

func registryCheckFlagSet() (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("registry check", flag.ContinueOnError)
	return fs, fs.Bool("json", false, `print the result as JSON on stdout: {"path", "ok", "version", "tools"}, or {"path", "ok": false, "problems"} for a broken registry`)
}

// mcpImportFlags are mcp import's flags.
type mcpImportFlags struct {
	registry  *string
	prefix    *string
	timeoutMS *int64
	out       *string
	url       *string
	headers   *stringList
	env       *stringList
}

func mcpImportFlagSet() (*flag.FlagSet, mcpImportFlags) {
	fs := flag.NewFlagSet("mcp import", flag.ContinueOnError)
	f := mcpImportFlags{
		registry:  fs.String("registry", "", "registry `FILE` whose mcp_servers names SERVER (default $GEM_REGISTRY, else "+registry.DefaultPath+" in the working folder or its parents)"),
		prefix:    fs.String("prefix", "", "the tools' `DOMAIN`: their names are DOMAIN.<remote tool name> (default SERVER, made a valid name segment)"),
		timeoutMS: fs.Int64("timeout-ms", remote.DefaultImportTimeoutMS, fmt.Sprintf("timeout_ms of every imported tool: `N` milliseconds (default %d)", remote.DefaultImportTimeoutMS)),
		out:       fs.String("o", "", "write the document to `FILE` (default stdout)"),
		url:       fs.String("url", "", "import from a streamable-HTTP server at `URL` not in the registry; SERVER names it in the document"),
		headers:   &stringList{},
		env:       &stringList{},
	}
	fs.Var(f.headers, "header", "`Name: value` header sent to the -url server (repeatable); write secrets as ${ENV}")
	fs.Var(f.env, "env", "`NAME=value` environment of the stdio server given after -- (repeatable); write secrets as ${ENV}")
	return fs, f
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ", ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// command describes one command for the usage.
type command struct {
	synopsis  string
	summary   string
	flags     func() *flag.FlagSet
	env       []string // names of the environment variables it reads, in envVars
	provider  bool     // it reads the tool providers' variables
	telemetry bool     // it reads the metrics' and traces' variables
}

// commandList names the commands, for error messages.
const commandList = "run, migrate, history, registry check, mcp import, device, version, help"

// commandOrder is the order of commands in the usage.
var commandOrder = []string{"run", "migrate", "history", "registry check", "mcp import", "device", "version"}

var commandUsage = map[string]command{
	"run": {
		synopsis:  "executor [run] [-migrate] [-registry FILE]",
		summary:   "work calls until SIGINT or SIGTERM, then drain running calls (the default command)",
		flags:     func() *flag.FlagSet { fs, _ := runFlagSet(); return fs },
		env:       envNames(envVars), // every one of the executor's own variables
		provider:  true,
		telemetry: true,
	},
	"migrate": {
		synopsis: "executor migrate",
		summary:  "apply River's and GEM's migrations (under an advisory lock), then exit",
		flags:    func() *flag.FlagSet { return flag.NewFlagSet("migrate", flag.ContinueOnError) },
		env:      []string{"DATABASE_URL", "GEM_DATABASE_SESSION_URL", "GEM_LOG_LEVEL", "GEM_LOG_FORMAT"},
	},
	"history": {
		synopsis: "executor history [-retire]",
		summary: "list the months of history (calls, receipts, runs) with their size and when each is retired; -retire archives and drops " +
			"those past GEM_RETENTION now, as executors do hourly; see docs/retention.md",
		flags: func() *flag.FlagSet { fs, _ := historyFlagSet(); return fs },
		env:   []string{"DATABASE_URL", "GEM_DATABASE_SESSION_URL", "GEM_RETENTION", "GEM_ARCHIVE_DIR"},
	},
	"registry check": {
		synopsis: "executor registry check [-json] [FILE]",
		summary:  "check a registry file without a database and summarise it; exit 1 and list every problem if it is broken",
		flags:    func() *flag.FlagSet { fs, _ := registryCheckFlagSet(); return fs },
		env:      []string{"GEM_REGISTRY"},
		provider: true,
	},
	"mcp import": {
		synopsis: "executor mcp import [-registry FILE] [-prefix DOMAIN] [-timeout-ms N] [-o FILE] [-url URL [-header H]... | -env NAME=value...] SERVER [-- COMMAND [ARG...]]",
		summary: "connect to MCP server SERVER of the registry's mcp_servers (or to -url URL, or to the stdio COMMAND after --), list its tools " +
			"and write registry entries for them (schemas, permissions and idempotency from its hints) for a person to review and merge; see docs/mcp-tools.md",
		flags: func() *flag.FlagSet { fs, _ := mcpImportFlagSet(); return fs },
		env:   []string{"GEM_REGISTRY", "GEM_LOG_LEVEL"},
	},
	"device": {
		synopsis: "executor device [-registry FILE]",
		summary: "serve the rest, mcp and script tools of a local registry file to GEM's hub (a brain) over a WebSocket, as a person's machine does; " +
			"no database credentials; see docs/devices.md",
		flags: func() *flag.FlagSet { fs, _ := deviceFlagSet(); return fs },
		env:   envNames(deviceEnvVars),
	},
	"version": {
		synopsis: "executor version",
		summary:  "print the version",
	},
}

// envVar is an environment variable the executor reads.
type envVar struct {
	name, def, meaning string
}

// envVars are the executor's own variables (executor.ConfigFromEnv and this command), with their defaults.
var envVars = []envVar{
	{"DATABASE_URL", "required", "PostgreSQL URL"},
	{"GEM_DATABASE_SESSION_URL", "DATABASE_URL", "PostgreSQL URL for connections that keep a session (LISTEN, locks, River) when DATABASE_URL is a transaction pooler"},
	{"GEM_REGISTRY", registry.DefaultPath + " in the working folder or its parents", "registry file"},
	{"GEM_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"GEM_LOG_FORMAT", gemlog.FormatJSON, "json lines, or console (coloured only on a terminal)"},
	{"GEM_EXECUTOR_ID", "executor-<hostname>-<pid>", "this executor's unique id"},
	{"GEM_EXECUTOR_MAX_WORKERS", fmt.Sprint(executor.MaxWorkersDefault), "calls one executor works on at once"},
	{"GEM_EXECUTOR_FETCH_COOLDOWN", duration(executor.FetchCooldownDefault), "least time between fetches"},
	{"GEM_EXECUTOR_FETCH_POLL_INTERVAL", duration(executor.FetchPollIntervalDefault), "fetch without a notification this often"},
	{"GEM_EXECUTOR_COMMITTERS", fmt.Sprintf("the number of CPUs, at least 2, at most %d (here %d)", executor.CommittersMax, executor.CommittersDefault()), "transactions committing batched calls in parallel"},
	{"GEM_EXECUTOR_BATCH_MAX", fmt.Sprint(executor.BatchMaxDefault), "most calls per transaction (1 turns batching off)"},
	{"GEM_EXECUTOR_BATCH_MAX_DURATION", duration(executor.BatchMaxDurationDefault), "a batch starts no call after this long"},
	{"GEM_EXECUTOR_RESCUE_INTERVAL", duration(executor.RescueIntervalDefault), "how often dead executors' calls are looked for"},
	{"GEM_EXECUTOR_RESCUE_AFTER", "longest tool timeout + " + duration(executor.RescueMarginDefault), "calls running this long on a live executor are taken up again"},
	{"GEM_EXECUTOR_DRAIN_TIMEOUT", duration(executor.DrainTimeoutDefault), "on SIGTERM, how long running calls may finish"},
	{"GEM_EXECUTOR_MAX_CONNS", "committers + 16", "the call pool's connections"},
	{"GEM_DB_CONNECT_WAIT", duration(gemsql.ConnectWaitDefault), "at start-up, how long to wait for a database that is down or starting"},
	{"GEM_RETENTION", fmt.Sprintf("%dd", executor.RetentionDefault/(24*time.Hour)), "how long history is kept before its month is archived and dropped: 400d, 9600h, or off (docs/retention.md)"},
	{"GEM_ARCHIVE_DIR", executor.ArchiveDirDefault + " in the working folder", "where retired months are archived (gzip-compressed CSV and a manifest per month)"},
	{"GEM_EXECUTOR_COMPLETED_JOB_RETENTION", duration(executor.CompletedJobRetentionDefault), "how long River keeps a finished call's job"},
	{"GEM_DEVICE_WAIT", duration(executor.DeviceWaitDefault), "how long a call for a device waits for one to be connected (a call's device_wait_ms overrides it)"},
	{"GEM_SECRET_KEY", "", "key sealing secret inputs (writeOnly or x-gem-secret properties): 64 hex digits or base64 of 32 bytes, the brain's too"},
	{"GEM_SECRET_KEY_PREVIOUS", "", "keys being rotated out, comma-separated: they still open what they sealed"},
	{"GEM_MAX_INPUT_BYTES", fmt.Sprint(executor.SizeLimitDefault), "largest input (JSON text) of a tool whose registry entry sets no limits.max_input_bytes; larger is refused input_too_large unread"},
	{"GEM_MAX_RESULT_BYTES", fmt.Sprint(executor.SizeLimitDefault), "largest result of a tool that sets no limits.max_result_bytes; larger fails the call result_too_large"},
	{remote.EnvBase64MinBytes, fmt.Sprint(remote.Base64MinBytesDefault), "an MCP server's undeclared base64 string this long or longer is stored as a file (0: only declared ones; docs/mcp-tools.md)"},
	{"GEM_PPROF_ADDR", "off", "serve Go's profiler on this address (keep it on loopback)"},
}

// telemetryEnvVars are the variables of the executor's metrics and traces (docs/observability.md): its own,
// and the OpenTelemetry ones it reads itself (the SDK and the exporter read the other OTEL_* variables).
var telemetryEnvVars = []envVar{
	{"GEM_EXECUTOR_METRICS_ADDR", executor.MetricsAddrDefault + " (when taken: none, logged)", "serve /metrics here; off counts and serves nothing"},
	{telemetry.EnvMetricsToken, "unset: no token", "bearer token /metrics requires (16 characters or more)"},
	{telemetry.EnvEndpoint, "unset: no traces", "OTLP/HTTP collector base URL (spans go to its /v1/traces), e.g. http://127.0.0.1:4318"},
	{telemetry.EnvTracesEndpoint, "unset", "full OTLP/HTTP traces URL (overrides the one above)"},
	{telemetry.EnvTracesExporter, "otlp when an endpoint is set", "otlp, or none to export nothing"},
	{telemetry.EnvSDKDisabled, "false", "true turns traces off"},
	{telemetry.EnvProtocol, "http/protobuf", "http/protobuf or http/json (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL for traces only)"},
	{telemetry.EnvTracesProtocol, "unset", "as above, for traces"},
	{telemetry.EnvServiceName, "gem-executor", "service.name of the executor's spans"},
	{telemetry.EnvTracesSampler, "parentbased_always_on", "sampler (the SDK reads it), with OTEL_TRACES_SAMPLER_ARG"},
	{telemetry.EnvTracesSamplerArg, "unset", "the sampler's argument, e.g. 0.1 for parentbased_traceidratio"},
	{telemetry.EnvExporterHeaders, "unset", "headers sent to the collector, e.g. authorization=Bearer%20xyz (the exporter reads it)"},
}

// deviceEnvVars are `executor device`'s variables (deviceagent.ConfigFromEnv).
var deviceEnvVars = []envVar{
	{"GEM_DEVICE_HUB", "required", "the brain's base URL, e.g. http://127.0.0.1:8088"},
	{"GEM_DEVICE_TOKEN", "required (or GEM_DEVICE_TOKEN_FILE)", "this device's token, from `brain devices add NAME`"},
	{"GEM_DEVICE_TOKEN_FILE", "unset", "a file holding the device token"},
	{"GEM_DEVICE_REGISTRY", deviceagent.RegistryPathDefault, "registry file of the tools this device serves"},
	{"GEM_DEVICE_MAX_RUNNING", fmt.Sprint(deviceagent.MaxRunningDefault), "calls the device runs at once"},
	{filestore.EnvDir, filestore.DefaultDir + " in the working folder", "the device's file store, for the files its MCP servers return"},
	{remote.EnvBase64MinBytes, fmt.Sprint(remote.Base64MinBytesDefault), "an MCP server's undeclared base64 string this long or longer is stored as a file (0: only declared ones)"},
	{"GEM_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"GEM_LOG_FORMAT", gemlog.FormatJSON, "json lines, or console (coloured only on a terminal)"},
}

// envNames returns the variables' names.
func envNames(vars []envVar) []string {
	names := make([]string, len(vars))
	for i, v := range vars {
		names[i] = v.name
	}
	return names
}

// providerEnvVars are the tool packs' variables (each pack's Variables: what its ConfigFromEnv reads), each
// once: a tool whose required variables are unset answers not_configured (docs/business-pack.md,
// docs/agent-skills-pack.md, docs/integrations.md).
var providerEnvVars = packEnvVars(ospack.Variables(), businesspack.Variables(), agentskillspack.Variables(), integrationspack.Variables())

// packEnvVars lists the packs' variables, each once (settings.Merge).
func packEnvVars(packs ...[]settings.Variable) []envVar {
	var vars []envVar
	for _, v := range settings.Merge(packs...) {
		vars = append(vars, envVar{v.Name, v.Default, v.Description})
	}
	return vars
}

// duration prints a default like the docs do: 1m, not 1m0s.
func duration(d time.Duration) string { return settings.FormatDuration(d) }

// printUsage prints the whole usage: every command, its flags, and every environment variable.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `executor runs GEM's tool calls: it takes calls from PostgreSQL (River), runs their tools and writes
exactly one receipt per call.

Usage:
`)
	for _, name := range commandOrder {
		c := commandUsage[name]
		fmt.Fprintf(w, "  %s\n      %s\n", c.synopsis, c.summary)
		printFlags(w, c, "      ")
	}
	fmt.Fprint(w, "  executor help [COMMAND]   (or -h, --help; executor COMMAND -h)\n      print this usage, or a command's\n\n")
	fmt.Fprint(w, "Environment (unset or zero means the default):\n")
	printEnv(w, envVars)
	fmt.Fprint(w, "\nMetrics and traces (docs/observability.md):\n")
	printEnv(w, telemetryEnvVars)
	fmt.Fprint(w, "\nTool providers (a tool whose variables are unset answers not_configured; a variable set to something unusable is logged at start;\nexecutor registry check lists both):\n")
	printEnv(w, providerEnvVars)
	fmt.Fprint(w, "\nExit status: 0 on success, 1 on failure (a broken registry, a database error), 2 on a usage or configuration error.\nSee docs/operations.md.\n")
}

// printCommandUsage prints one command's usage: synopsis, flags and the environment variables it reads.
func printCommandUsage(w io.Writer, name string) {
	c := commandUsage[name]
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", c.synopsis, upper(c.summary))
	if c.flags != nil {
		if fs := c.flags(); hasFlags(fs) {
			fmt.Fprint(w, "\nFlags:\n")
			printFlags(w, c, "  ")
		}
	}
	if len(c.env) > 0 {
		fmt.Fprint(w, "\nEnvironment (unset or zero means the default):\n")
		var vars []envVar
		seen := map[string]bool{}
		for _, v := range append(append([]envVar{}, envVars...), deviceEnvVars...) {
			for _, n := range c.env {
				if v.name == n && !seen[n] {
					seen[n] = true
					vars = append(vars, v)
				}
			}
		}
		printEnv(w, vars)
	}
	if c.telemetry {
		fmt.Fprint(w, "\nMetrics and traces (docs/observability.md):\n")
		printEnv(w, telemetryEnvVars)
	}
	if c.provider {
		fmt.Fprint(w, "\nTool providers (a tool whose variables are unset answers not_configured; a variable set to something unusable is logged at start):\n")
		printEnv(w, providerEnvVars)
	}
}

// printShortUsage follows a usage error: the synopsis and where the whole usage is.
func printShortUsage(w io.Writer, name string) {
	fmt.Fprintf(w, "usage: %s\n(executor help %s prints its flags and environment)\n", commandUsage[name].synopsis, strings.Fields(name)[0])
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// printFlags prints a command's flags, indented under it.
func printFlags(w io.Writer, c command, indent string) {
	if c.flags == nil {
		return
	}
	c.flags().VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		name := "-" + f.Name
		if arg != "" {
			name += " " + arg
		}
		fmt.Fprintf(w, "%s%s\n%s    %s\n", indent, name, indent, usage)
	})
}

// printEnv prints variables as a table of names and defaults, each with its meaning under it.
func printEnv(w io.Writer, vars []envVar) {
	width := 0
	for _, v := range vars {
		width = max(width, len(v.name))
	}
	for _, v := range vars {
		fmt.Fprintf(w, "  %-*s  default: %s\n      %s\n", width, v.name, v.def, v.meaning)
	}
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
