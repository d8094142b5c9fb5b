package main

import (
	"context"
	"time"

	"github.com/gemhq/gem/sql/telemetry"
	"github.com/prometheus/client_golang/prometheus"
)

// openTelemetry builds the brain's metrics registry and tracer provider (docs/observability.md) and
// registers what the brain reports beside its requests and LLM calls: the queue, read from PostgreSQL at
// each scrape, and the devices connected to this hub.
func (m *Main) openTelemetry(cfg Config) error {
	tel, err := telemetry.New(cfg.Telemetry, "gem-brain")
	if err != nil {
		return err
	}
	m.Telemetry = tel
	return tel.Register(telemetry.NewQueueCollector(m.Pool),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gem_devices_connected",
			Help: "Devices with a session open on this brain's hub."}, func() float64 {
			if m.Devices == nil {
				return 0
			}
			return float64(m.Devices.Connected())
		}))
}

// closeTelemetry exports the spans still buffered.
func (m *Main) closeTelemetry() {
	if m.Telemetry == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Telemetry.Shutdown(ctx); err != nil {
		m.Log.Warn().Err(err).Msg("spans were not all exported")
	}
	m.Telemetry = nil
}
