package ospack

import (
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry/settings"
)

// The os pack's settings. The business pack reads the time zone too (its quotes' and invoices' dates): one
// variable, read the same way by both (LoadTimeZone), reported once at start.
const (
	// EnvTimeZone is the business's IANA time zone.
	EnvTimeZone = "GEM_BUSINESS_TIMEZONE"
	// TimeZoneDefault is the time zone when EnvTimeZone is unset.
	TimeZoneDefault = "Australia/Sydney"
)

// Config configures the os pack's tools. The zero value works: dates follow TimeZoneDefault.
type Config struct {
	// TimeZone is the business's IANA time zone (EnvTimeZone): what "today" is in the state snapshot (the
	// jobs starting in the next seven days, the invoices overdue), and the health check's time zone.
	// Defaults to TimeZoneDefault.
	TimeZone string
}

// ConfigFromEnv reads the configuration through getenv (the executor's Main passes os.Getenv). A value
// that cannot be used does not stop the executor: Problems lists it, and the tools that need it answer
// not_configured, naming the variable.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{TimeZone: strings.TrimSpace(getenv(EnvTimeZone))}
}

// WithDefaults returns the config with defaults in place of zero values.
func (c Config) WithDefaults() Config {
	if c.TimeZone == "" {
		c.TimeZone = TimeZoneDefault
	}
	return c
}

// Problems lists the settings that are set but cannot be used, each error naming its variable.
func (c Config) Problems() []error {
	if _, err := LoadTimeZone(c.WithDefaults().TimeZone); err != nil {
		return []error{err}
	}
	return nil
}

// LoadTimeZone resolves a value of EnvTimeZone; its error names the variable and the value. (The executor
// links the time zone database, so a name resolves on a host without one.)
func LoadTimeZone(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a time zone: %w", EnvTimeZone, name, err)
	}
	return loc, nil
}

// Variables are the variables ConfigFromEnv reads, with their defaults (docs/business-pack.md, whose time zone
// this is too, lists them).
func Variables() []settings.Variable {
	return []settings.Variable{{Name: EnvTimeZone, Default: TimeZoneDefault, Description: "the business's time zone (what \"today\" is)"}}
}
