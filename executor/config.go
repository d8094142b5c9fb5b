package executor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Config. River's own defaults suit background jobs; these suit calls that a person or an LLM
// is waiting on (see docs/operations.md for why each matters).
const (
	// MaxWorkersDefault is how many calls one executor works on at once.
	MaxWorkersDefault = 200
	// FetchCooldownDefault is the least time between two fetches of new jobs. River's 100 ms default adds
	// tens of milliseconds to every call; 1 ms keeps insert → receipt near 2 ms.
	FetchCooldownDefault = time.Millisecond
	// FetchPollIntervalDefault is how often executors look for jobs without a notification (calls are
	// normally announced by their insert trigger at once).
	FetchPollIntervalDefault = 500 * time.Millisecond
	// CommittersMax caps the default number of committers.
	CommittersMax = 8
	// BatchMaxDefault is the most calls committed in one transaction.
	BatchMaxDefault = 128
	// BatchMaxDurationDefault is how long a batch may keep adding calls before it commits.
	BatchMaxDurationDefault = 50 * time.Millisecond
	// DrainTimeoutDefault is how long a stopping executor lets running calls finish before cancelling them.
	DrainTimeoutDefault = 30 * time.Second
	// RescueIntervalDefault is how often an executor looks for running calls of dead executors.
	RescueIntervalDefault = time.Second
	// RescueMarginDefault is added to the longest tool timeout to get the default RescueAfter.
	RescueMarginDefault = 15 * time.Second
	// DeviceWaitDefault is how long a call for a device waits for one to be connected.
	DeviceWaitDefault = 30 * time.Second
	// SizeLimitDefault bounds inputs and results of tools whose registry entry sets no limits.
	SizeLimitDefault int64 = 4 << 20
	// RetentionDefault is how long history (calls, receipts, runs) is kept before its month is archived and
	// dropped: a year of audit, and the same month of last year, plus the month being retired.
	RetentionDefault = 400 * 24 * time.Hour
	// ArchiveDirDefault is where retired months are archived, relative to the working folder.
	ArchiveDirDefault = "gem-archive"
	// CompletedJobRetentionDefault is how long River keeps the jobs of finished calls. GEM's receipts are the
	// audit log; a job only shows a retried call's earlier errors, and a short life keeps river_job, which
	// every fetch reads, the size of the queue (River's own default is 24h).
	CompletedJobRetentionDefault = 10 * time.Minute
	// AbandonGraceDefault is how long a handler may run past its timeout, ignoring its cancelled context,
	// before the executor abandons it.
	AbandonGraceDefault = 2 * time.Second
)

// CommittersDefault is the default number of committers: the number of CPUs, at least 2, at most
// CommittersMax.
func CommittersDefault() int { return min(max(runtime.NumCPU(), 2), CommittersMax) }

// Config configures an Executor. The zero value of every field means its default.
type Config struct {
	// DatabaseURL is the PostgreSQL connection URL. Required (DATABASE_URL).
	DatabaseURL string
	// SessionURL is where connections that keep a session go (LISTEN, the liveness lock, River's pool)
	// when DatabaseURL is a pooler in transaction mode. Defaults to DatabaseURL (GEM_DATABASE_SESSION_URL).
	SessionURL string

	// RegistryPath is the registry file. Defaults to tools.registry.json, looked up in the working folder
	// and its parents (GEM_REGISTRY).
	RegistryPath string

	// ID identifies this executor in calls' worker column and River's attempted_by. It must be unique among
	// running executors. Defaults to "executor-<hostname>-<pid>" (GEM_EXECUTOR_ID).
	ID string

	// MaxWorkers is how many calls this executor works on at once. Defaults to 200
	// (GEM_EXECUTOR_MAX_WORKERS).
	MaxWorkers int

	// FetchCooldown is the least time between two fetches of new jobs. Defaults to 1ms
	// (GEM_EXECUTOR_FETCH_COOLDOWN).
	FetchCooldown time.Duration

	// FetchPollInterval is how often to look for jobs when no notification arrives. Defaults to 500ms
	// (GEM_EXECUTOR_FETCH_POLL_INTERVAL).
	FetchPollInterval time.Duration

	// Committers is how many transactions commit batched calls in parallel. Defaults to the number of CPUs,
	// at least 2 and at most 8 (GEM_EXECUTOR_COMMITTERS): each committer keeps a database backend busy, and
	// more committers than cores cost more CPU per call than they gain (on 2 cores, 2 committers drained
	// calls 20% faster than 4).
	Committers int

	// BatchMax is the most calls committed in one transaction; 1 turns batching off. Defaults to 128
	// (GEM_EXECUTOR_BATCH_MAX).
	BatchMax int

	// BatchMaxDuration is how long one batch may keep adding calls before it commits. Defaults to 50ms
	// (GEM_EXECUTOR_BATCH_MAX_DURATION).
	BatchMaxDuration time.Duration

	// RescueAfter is how long a call may stay running before River's rescuer takes it up again even though
	// its executor still holds its liveness lock (it is alive but stuck). Defaults to the longest tool
	// timeout plus 15s (GEM_EXECUTOR_RESCUE_AFTER).
	RescueAfter time.Duration

	// RescueInterval is how often the executor looks for running calls whose executor died (its liveness lock
	// is free) and makes them available again. Defaults to 1s (GEM_EXECUTOR_RESCUE_INTERVAL).
	RescueInterval time.Duration

	// DrainTimeout is how long a stopping executor (SIGTERM) lets running calls finish before cancelling
	// them; cancelled calls are retried by another executor. Defaults to 30s (GEM_EXECUTOR_DRAIN_TIMEOUT).
	DrainTimeout time.Duration

	// AbandonGrace is how long a handler that ignores its cancelled context may run past its timeout before
	// it is abandoned. Defaults to 2s.
	AbandonGrace time.Duration

	// DeviceWait is how long a call for a device waits for the device it names (or, agnostic, for any device
	// serving its tool) to be connected before it ends device_unavailable; a call's device_wait_ms overrides
	// it. Defaults to 30s (GEM_DEVICE_WAIT).
	DeviceWait time.Duration

	// DBConnectWait is how long start-up keeps trying to reach a database that is down or starting.
	// Defaults to 1m (GEM_DB_CONNECT_WAIT).
	DBConnectWait time.Duration

	// MaxInputBytes bounds a call's input (its JSON text) for tools whose registry entry sets no
	// limits.max_input_bytes: a larger input is refused input_too_large without being read into the
	// executor. Defaults to 4 MiB (GEM_MAX_INPUT_BYTES).
	MaxInputBytes int64
	// MaxResultBytes bounds a handler's result for tools that set no limits.max_result_bytes: a larger one
	// fails its call result_too_large. Defaults to 4 MiB (GEM_MAX_RESULT_BYTES).
	MaxResultBytes int64

	// SecretKey seals and opens the secret inputs of calls (registry properties marked writeOnly or
	// x-gem-secret; docs/governance.md#secrets): 32 bytes in hex or base64, the same for the brain and every
	// executor (GEM_SECRET_KEY). Without it a call with a secret input is refused not_configured.
	SecretKey string
	// SecretKeysPrevious are keys being rotated out: they still open what they sealed (GEM_SECRET_KEY_PREVIOUS,
	// comma-separated).
	SecretKeysPrevious []string

	// MaxConns is the size of the connection pool that runs calls: each committer holds one, and so does
	// each isolated call while its handler runs. River's own pool is separate (10 connections). Defaults to
	// Committers + 16 (GEM_EXECUTOR_MAX_CONNS).
	MaxConns int32

	// MetricsAddr is where Main serves /metrics in Prometheus's text format (docs/observability.md): a
	// host:port, or "off" to count and serve nothing. Defaults to 127.0.0.1:9464; when that default is
	// taken (another executor on the machine) the executor logs it and serves none, while an address that
	// is set must be free or the executor does not start (GEM_EXECUTOR_METRICS_ADDR).
	MetricsAddr string

	// Telemetry configures traces (OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables) and the
	// bearer token /metrics requires (GEM_METRICS_TOKEN). Defaults to no traces and no token.
	Telemetry telemetry.Config

	// Retention is how long history is kept: a month of calls, receipts, runs and turns is archived to
	// ArchiveDir and dropped once it ended Retention ago (docs/retention.md). Negative keeps everything.
	// Defaults to 400 days (GEM_RETENTION: 400d, 9600h, or off).
	Retention time.Duration

	// ArchiveDir is where retired months are written (one folder per month of gzip-compressed CSV files and
	// a manifest) before they are dropped; a month that cannot be written is not dropped. Defaults to
	// gem-archive in the working folder (GEM_ARCHIVE_DIR).
	ArchiveDir string

	// CompletedJobRetention is how long River keeps the job of a finished call. Defaults to 10m
	// (GEM_EXECUTOR_COMPLETED_JOB_RETENTION).
	CompletedJobRetention time.Duration

	// Metrics is the registry the executor counts its calls, batches and rescues in; Main gives it the
	// process's. Defaults to nil: nothing is counted.
	Metrics prometheus.Registerer

	// TracerProvider makes the spans of calls, continuing the trace each call's job carries; Main gives it
	// the process's when traces are exported. Defaults to nil: calls have no spans.
	TracerProvider trace.TracerProvider
}

// WithDefaults returns a copy of the config with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.RegistryPath == "" {
		c.RegistryPath = "tools.registry.json"
	}
	if c.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		c.ID = fmt.Sprintf("executor-%s-%d", host, os.Getpid())
	}
	c.MaxWorkers = orDefault(c.MaxWorkers, MaxWorkersDefault)
	c.FetchCooldown = orDefault(c.FetchCooldown, FetchCooldownDefault)
	c.FetchPollInterval = orDefault(c.FetchPollInterval, FetchPollIntervalDefault)
	c.Committers = orDefault(c.Committers, CommittersDefault())
	c.BatchMax = orDefault(c.BatchMax, BatchMaxDefault)
	c.BatchMaxDuration = orDefault(c.BatchMaxDuration, BatchMaxDurationDefault)
	c.RescueInterval = orDefault(c.RescueInterval, RescueIntervalDefault)
	c.DrainTimeout = orDefault(c.DrainTimeout, DrainTimeoutDefault)
	c.AbandonGrace = orDefault(c.AbandonGrace, AbandonGraceDefault)
	c.DeviceWait = orDefault(c.DeviceWait, DeviceWaitDefault)
	c.DBConnectWait = orDefault(c.DBConnectWait, gemsql.ConnectWaitDefault)
	c.MaxInputBytes = orDefault(c.MaxInputBytes, SizeLimitDefault)
	c.MaxResultBytes = orDefault(c.MaxResultBytes, SizeLimitDefault)
	if c.MaxConns == 0 {
		c.MaxConns = int32(c.Committers) + 16
	}
	if c.MetricsAddr == "" {
		c.MetricsAddr = MetricsAddrDefault
	}
	c.Retention = orDefault(c.Retention, RetentionDefault)
	if c.ArchiveDir == "" {
		c.ArchiveDir = ArchiveDirDefault
	}
	c.CompletedJobRetention = orDefault(c.CompletedJobRetention, CompletedJobRetentionDefault)
	return c
}

func orDefault[T int | int32 | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (c Config) validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DatabaseURL is required (set DATABASE_URL)"))
	}
	if c.MaxWorkers < 1 || c.MaxWorkers > 10_000 {
		errs = append(errs, fmt.Errorf("MaxWorkers must be between 1 and 10000, not %d", c.MaxWorkers))
	}
	if c.FetchCooldown < time.Millisecond {
		errs = append(errs, fmt.Errorf("FetchCooldown must be at least 1ms, not %s", c.FetchCooldown))
	}
	if c.FetchPollInterval < c.FetchCooldown {
		errs = append(errs, fmt.Errorf("FetchPollInterval (%s) must not be less than FetchCooldown (%s)", c.FetchPollInterval, c.FetchCooldown))
	}
	if c.Committers < 1 || c.Committers > 64 {
		errs = append(errs, fmt.Errorf("Committers must be between 1 and 64, not %d", c.Committers))
	}
	if c.BatchMax < 1 {
		errs = append(errs, fmt.Errorf("BatchMax must be at least 1, not %d", c.BatchMax))
	}
	if c.RescueAfter < 0 {
		errs = append(errs, fmt.Errorf("RescueAfter must not be negative, not %s", c.RescueAfter))
	}
	if c.RescueInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("RescueInterval must be at least 10ms, not %s", c.RescueInterval))
	}
	if c.DeviceWait < 0 || c.DeviceWait > time.Hour {
		errs = append(errs, fmt.Errorf("DeviceWait must be between 0s and 1h, not %s", c.DeviceWait))
	}
	if c.Retention > 0 && c.Retention < 24*time.Hour {
		errs = append(errs, fmt.Errorf("Retention must be at least 24h (or negative: keep everything), not %s", c.Retention))
	}
	if c.CompletedJobRetention < 0 {
		errs = append(errs, fmt.Errorf("CompletedJobRetention must not be negative, not %s", c.CompletedJobRetention))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("DrainTimeout must not be negative, not %s", c.DrainTimeout))
	}
	for name, v := range map[string]int64{"MaxInputBytes": c.MaxInputBytes, "MaxResultBytes": c.MaxResultBytes} {
		if v < registry.SizeLimitMin || v > registry.SizeLimitMax {
			errs = append(errs, fmt.Errorf("%s must be between %d and %d bytes, not %d", name, registry.SizeLimitMin, registry.SizeLimitMax, v))
		}
	}
	if c.MaxConns < int32(c.Committers)+4 {
		errs = append(errs, fmt.Errorf("MaxConns (%d) must be at least Committers + 4 (%d)", c.MaxConns, c.Committers+4))
	}
	return errors.Join(errs...)
}

// ConfigFromEnv reads the configuration from environment variables (see Config's fields), through getenv
// (os.Getenv in production, a map in tests).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:  getenv("DATABASE_URL"),
		SessionURL:   getenv("GEM_DATABASE_SESSION_URL"),
		RegistryPath: getenv("GEM_REGISTRY"),
		ID:           getenv("GEM_EXECUTOR_ID"),
	}
	var errs []error
	intVar := func(name string, dst *int) {
		if s := getenv(name); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a whole number", name, s))
			}
			*dst = v
		}
	}
	durVar := func(name string, dst *time.Duration) {
		if s := getenv(name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a duration (like 500ms or 2s)", name, s))
			}
			*dst = v
		}
	}
	intVar("GEM_EXECUTOR_MAX_WORKERS", &c.MaxWorkers)
	durVar("GEM_EXECUTOR_FETCH_COOLDOWN", &c.FetchCooldown)
	durVar("GEM_EXECUTOR_FETCH_POLL_INTERVAL", &c.FetchPollInterval)
	intVar("GEM_EXECUTOR_COMMITTERS", &c.Committers)
	intVar("GEM_EXECUTOR_BATCH_MAX", &c.BatchMax)
	durVar("GEM_EXECUTOR_BATCH_MAX_DURATION", &c.BatchMaxDuration)
	durVar("GEM_EXECUTOR_RESCUE_AFTER", &c.RescueAfter)
	durVar("GEM_EXECUTOR_RESCUE_INTERVAL", &c.RescueInterval)
	durVar("GEM_EXECUTOR_DRAIN_TIMEOUT", &c.DrainTimeout)
	durVar("GEM_DEVICE_WAIT", &c.DeviceWait)
	durVar("GEM_DB_CONNECT_WAIT", &c.DBConnectWait)
	durVar("GEM_EXECUTOR_COMPLETED_JOB_RETENTION", &c.CompletedJobRetention)
	if s := getenv("GEM_RETENTION"); s != "" {
		d, err := gemsql.ParseRetention(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("GEM_RETENTION: %w", err))
		}
		c.Retention = d
	}
	c.ArchiveDir = getenv("GEM_ARCHIVE_DIR")
	var maxConns, maxInput, maxResult int
	intVar("GEM_EXECUTOR_MAX_CONNS", &maxConns)
	intVar("GEM_MAX_INPUT_BYTES", &maxInput)
	intVar("GEM_MAX_RESULT_BYTES", &maxResult)
	c.MaxInputBytes, c.MaxResultBytes = int64(maxInput), int64(maxResult)
	c.MaxConns = int32(maxConns)
	c.MetricsAddr = strings.TrimSpace(getenv("GEM_EXECUTOR_METRICS_ADDR"))
	if strings.EqualFold(c.MetricsAddr, MetricsOff) {
		c.MetricsAddr = MetricsOff
	}
	tel, err := telemetry.ConfigFromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.Telemetry = tel
	c.SecretKey = getenv("GEM_SECRET_KEY")
	if prev := getenv("GEM_SECRET_KEY_PREVIOUS"); prev != "" {
		c.SecretKeysPrevious = strings.Split(prev, ",")
	}
	return c, errors.Join(errs...)
}
