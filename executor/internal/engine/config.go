package engine

import (
	"time"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Config is executor.Config field for field (executor.New converts one to the other, so a field added there
// and not here does not compile). Its meaning, defaults and checks are the root's.
type Config struct {
	DatabaseURL           string
	SessionURL            string
	RegistryPath          string
	ID                    string
	MaxWorkers            int
	FetchCooldown         time.Duration
	FetchPollInterval     time.Duration
	Committers            int
	BatchMax              int
	BatchMaxDuration      time.Duration
	RescueAfter           time.Duration
	RescueInterval        time.Duration
	DrainTimeout          time.Duration
	AbandonGrace          time.Duration
	DeviceWait            time.Duration
	DBConnectWait         time.Duration
	MaxInputBytes         int64
	MaxResultBytes        int64
	SecretKey             string
	SecretKeysPrevious    []string
	MaxConns              int32
	MetricsAddr           string
	Telemetry             telemetry.Config
	Retention             time.Duration
	ArchiveDir            string
	CompletedJobRetention time.Duration
	Metrics               prometheus.Registerer
	TracerProvider        trace.TracerProvider
}
