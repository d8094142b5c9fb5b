package business

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // the business time zone must resolve on hosts without a zoneinfo database
)

// TimeZoneDefault is the business's time zone unless GEM_BUSINESS_TIMEZONE says otherwise.
const TimeZoneDefault = "Australia/Sydney"

// EnvTimeZone is the environment variable read by ConfigFromEnv for Config.TimeZone.
const EnvTimeZone = "GEM_BUSINESS_TIMEZONE"

// Config configures the business pack. The zero value works: dates follow TimeZoneDefault.
type Config struct {
	// TimeZone is the business's IANA time zone. It decides what "today" is: a quote's validity, an
	// invoice's issue and due dates, and whether an invoice is overdue. Defaults to TimeZoneDefault.
	TimeZone string
}

// ConfigFromEnv reads the configuration from environment variables (pass os.Getenv). Values are checked
// when a tool needs them, so a mistake shows in that tool's receipt, naming the variable.
func ConfigFromEnv(getenv func(string) string) Config {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	return Config{
		TimeZone: get(EnvTimeZone),
	}
}

// WithDefaults returns the config with defaults in place of zero values.
func (c Config) WithDefaults() Config {
	if c.TimeZone == "" {
		c.TimeZone = TimeZoneDefault
	}
	return c
}

// location resolves TimeZone.
func (c Config) location() (*time.Location, error) {
	loc, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a time zone: %w", EnvTimeZone, c.TimeZone, err)
	}
	return loc, nil
}
