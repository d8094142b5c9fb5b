// Package settings holds what the tool packs' settings have in common: the readings of a duration and of an
// http(s) URL, whose errors name the variable and its value. Each pack reads its variables through the
// getenv its ConfigFromEnv is given and checks them with these, so one mistake reads the same in every pack.
package settings

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// ParseDuration reads the value of the variable name as a positive duration such as 30s or 5m. Its error
// names the variable and the value.
func ParseDuration(name, value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a duration like 30s or 5m", name, value)
	}
	return d, nil
}

// FormatDuration prints a duration as the docs and the usage texts write it: 1h, not 1h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// HTTPURLProblem says why value, the variable name's, cannot be a provider's address (an http or https URL
// with a host), or is nil: a request to it would fail on every call.
func HTTPURLProblem(name, value string) error {
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s=%q is not an http(s) URL", name, value)
	}
	return nil
}
