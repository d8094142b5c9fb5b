package businesspack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/llmconfig"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/internal/settingstest"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry/phone"
	"github.com/stretchr/testify/require"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		businesspack.EnvTwilioAccountSID: " ACxyz ", businesspack.EnvTwilioAuthToken: "tok", businesspack.EnvSMSFrom: "+61400000000",
		businesspack.EnvSMTPURL: "smtp://h", businesspack.EnvEmailFrom: "a@b.example", ospack.EnvTimeZone: "Australia/Perth",
	}
	c := businesspack.ConfigFromEnv(func(k string) string { return env[k] }).WithDefaults()
	require.Equal(t, "ACxyz", c.SMS.AccountSID)
	require.Empty(t, c.SMS.Missing())
	require.Empty(t, c.Email.Missing())
	require.Equal(t, businesspack.TwilioBaseURLDefault, c.SMS.BaseURL)
	region, err := c.ResolvePhoneRegion()
	require.NoError(t, err)
	require.Equal(t, "AU", region)
	// The time zone is the os pack's setting: businesshandlers.RegisterWithOS gives it, ConfigFromEnv does not read it.
	require.Equal(t, businesspack.TimeZoneDefault, c.TimeZone)
	loc, err := businesspack.Config{TimeZone: "Australia/Perth"}.Location()
	require.NoError(t, err)
	require.Equal(t, "Australia/Perth", loc.String())

	c = businesspack.Config{}.WithDefaults()
	require.Equal(t, []string{businesspack.EnvTwilioAccountSID, businesspack.EnvTwilioAuthToken, businesspack.EnvSMSFrom}, c.SMS.Missing())
	require.Equal(t, []string{businesspack.EnvSMTPURL, businesspack.EnvEmailFrom}, c.Email.Missing())
	require.Equal(t, businesspack.TimeZoneDefault, c.TimeZone)
	_, err = businesspack.Config{TimeZone: "Mars/Olympus"}.Location()
	require.ErrorContains(t, err, ospack.EnvTimeZone)
}

// TestConfigProblems: Problems lists each setting that is set but cannot be used, naming its variable, and
// nothing for settings that are unset or fine.
func TestConfigProblems(t *testing.T) {
	t.Parallel()
	problems := func(env map[string]string) []string {
		var out []string
		for _, err := range businesspack.ConfigFromEnv(func(k string) string { return env[k] }).Problems() {
			out = append(out, err.Error())
		}
		return out
	}
	require.Empty(t, problems(nil))
	require.Empty(t, problems(map[string]string{ospack.EnvTimeZone: "Australia/Perth", phone.EnvRegion: "nz", businesspack.EnvBusinessHours: "Sat 08:00-12:00",
		businesspack.EnvTwilioBaseURL: "http://127.0.0.1:1", businesspack.EnvSMTPURL: "smtps://u:p@h", businesspack.EnvEmailFrom: "Acme <a@b.example>", llmconfig.EnvTimeout: "5s"}))

	// GEM_BUSINESS_TIMEZONE is the os pack's to report (ospack.Config.Problems), not this pack's.
	got := problems(map[string]string{ospack.EnvTimeZone: "Mars/Olympus", phone.EnvRegion: "ZZ", businesspack.EnvBusinessHours: "whenever",
		businesspack.EnvTwilioBaseURL: "ftp://twilio", businesspack.EnvSMTPURL: "http://u:secret@h", businesspack.EnvEmailFrom: "not an address",
		llmconfig.EnvTimeout: "soon", llmconfig.EnvMaxTokens: "many"})
	require.Len(t, got, 7, "%q", got)
	for i, env := range []string{phone.EnvRegion, businesspack.EnvBusinessHours, businesspack.EnvTwilioBaseURL, businesspack.EnvSMTPURL, businesspack.EnvEmailFrom,
		llmconfig.EnvMaxTokens, llmconfig.EnvTimeout} {
		require.Contains(t, got[i], env)
	}
	require.NotContains(t, strings.Join(got, "\n"), "secret", "a URL's password is never repeated")
	require.Equal(t, []string{`GEM_LLM_BASE_URL="ollama:11434" is not an http(s) URL`}, problems(map[string]string{llmconfig.EnvBaseURL: "ollama:11434"}),
		"an LLM API no request can reach")
}

func TestParseWorkingHours(t *testing.T) {
	t.Parallel()
	wh, err := businesspack.ParseWorkingHours(businesspack.BusinessHoursDefault)
	require.NoError(t, err)
	require.Nil(t, wh.Days[time.Sunday])
	require.Nil(t, wh.Days[time.Saturday])
	require.Equal(t, &businesspack.WorkingDay{7 * 60, 17 * 60}, wh.Days[time.Monday])
	require.Equal(t, &businesspack.WorkingDay{7 * 60, 17 * 60}, wh.Days[time.Friday])

	wh, err = businesspack.ParseWorkingHours("Fri-Mon 08:30-12:00; wed 13:00-24:00")
	require.NoError(t, err)
	for _, d := range []time.Weekday{time.Friday, time.Saturday, time.Sunday, time.Monday} {
		require.Equal(t, &businesspack.WorkingDay{8*60 + 30, 12 * 60}, wh.Days[d], d)
	}
	require.Nil(t, wh.Days[time.Tuesday])
	require.Equal(t, &businesspack.WorkingDay{13 * 60, 24 * 60}, wh.Days[time.Wednesday])

	for _, bad := range []string{"", "Mon-Fri", "Mon-Fri 9-5", "Mon-Fri 17:00-07:00", "Mon-Fri 07:00-17:00; Fri 08:00-09:00",
		"Funday 07:00-17:00", "Mon 07:60-08:00", "Mon 07:00-25:00"} {
		_, err := businesspack.ParseWorkingHours(bad)
		require.ErrorContains(t, err, businesspack.EnvBusinessHours, bad)
	}
}

// TestVariables: Variables are what ConfigFromEnv reads, and docs/business-pack.md lists each with its default.
func TestVariables(t *testing.T) {
	t.Parallel()
	settingstest.RequireVariablesRead(t, func(getenv func(string) string) { businesspack.ConfigFromEnv(getenv) }, businesspack.Variables())
	settingstest.RequireDocumented(t, "../../docs/business-pack.md", businesspack.Variables())
}
