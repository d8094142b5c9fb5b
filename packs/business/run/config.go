package businessrun

import (
	"cmp"
	"fmt"
	"net"

	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"
	_ "time/tzdata" // the business time zone must resolve on hosts without a zoneinfo database

	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/executor/llmtext"
	"github.com/gemhq/gem/llmconfig"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry/phone"
)

// Defaults of Config.
const (
	// TimeZoneDefault is the business's time zone unless GEM_BUSINESS_TIMEZONE says otherwise: the os
	// pack's setting, which this pack reads too.
	TimeZoneDefault = ospack.TimeZoneDefault
	// TwilioBaseURLDefault is Twilio's REST API.
	TwilioBaseURLDefault = "https://api.twilio.com"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvTimeZone         = ospack.EnvTimeZone
	EnvTwilioAccountSID = "GEM_SMS_TWILIO_ACCOUNT_SID"
	EnvTwilioAuthToken  = "GEM_SMS_TWILIO_AUTH_TOKEN"
	EnvSMSFrom          = "GEM_SMS_FROM"
	EnvTwilioBaseURL    = "GEM_SMS_TWILIO_BASE_URL"
	EnvSMSCountryCode   = phone.EnvCallingCode
	EnvSMTPURL          = "GEM_SMTP_URL"
	EnvEmailFrom        = "GEM_EMAIL_FROM"
)

// smsRequiredEnv and emailRequiredEnv are what comms.send_sms and comms.send_email need.
var (
	smsRequiredEnv   = []string{EnvTwilioAccountSID, EnvTwilioAuthToken, EnvSMSFrom}
	emailRequiredEnv = []string{EnvSMTPURL, EnvEmailFrom}
)

// Config configures the business pack. The zero value works: the SMS and email providers are not
// configured (their tools answer not_configured) and dates follow TimeZoneDefault.
type Config struct {
	// TimeZone is the business's IANA time zone. It decides what "today" is: a quote's validity, an
	// invoice's issue and due dates, and whether an invoice is overdue. Defaults to TimeZoneDefault.
	TimeZone string

	// BusinessHours are the working hours calendar.find_slots offers and leads.schedule_inspection books
	// parts of the day in, like "Mon-Fri 07:00-17:00; Sat 08:00-12:00" (GEM_BUSINESS_HOURS). Defaults to
	// BusinessHoursDefault.
	BusinessHours string

	// PhoneRegion is the region phone numbers without a country code are read in (phone.EnvRegion): leads
	// are one per number in its E.164 form, and SMS go to that form. Defaults to phone.RegionDefault, or to
	// the region of SMS.CountryCode when only that (deprecated) is set.
	PhoneRegion string

	// SMS configures comms.send_sms (Twilio).
	SMS TwilioConfig

	// Email configures comms.send_email (SMTP).
	Email SMTPConfig

	// FileStore is the directory of GEM's file store, where quote PDFs, job cards, warranty certificates and
	// website packs are written (filestore.EnvDir). Defaults to filestore.DefaultDir.
	FileStore string

	// LLM configures the tools that write text (marketing.generate_*, media.generate_alt_text and
	// generate_caption); without a provider they answer not_configured. Read from the GEM_LLM_* variables.
	LLM llmconfig.Config
	// LLMError is what was wrong with GEM_LLM_* when read from the environment; the LLM tools then answer
	// not_configured with it.
	LLMError error

	// Business is how documents and customer messages name the business (letterhead.go). Read from the
	// GEM_BUSINESS_* variables; the name defaults to BusinessNameDefault.
	Business Letterhead
}

// TwilioConfig configures sending SMS through Twilio's Messages API. AccountSID, AuthToken and From are
// required; without them comms.send_sms answers not_configured.
type TwilioConfig struct {
	// AccountSID is the Twilio account ("AC..."). No default.
	AccountSID string
	// AuthToken is the account's auth token. No default.
	AuthToken string
	// From is the sender: a Twilio phone number (E.164), an alphanumeric sender id, or a Messaging
	// Service SID ("MG..."). No default.
	From string
	// BaseURL is the API's address; tests point it at a fake server. Defaults to TwilioBaseURLDefault.
	BaseURL string
	// CountryCode is the deprecated GEM_SMS_DEFAULT_COUNTRY_CODE: the calling code of the region numbers
	// without one are read in. Config.PhoneRegion replaces it; when both are set they must agree.
	CountryCode string
	// HTTPClient makes the requests; the call's deadline bounds each one. Defaults to a client of its own.
	HTTPClient *http.Client
}

// SMTPConfig configures sending email through an SMTP server. URL and From are required; without them
// comms.send_email answers not_configured.
type SMTPConfig struct {
	// URL is the server: smtp://user:password@host:587 (STARTTLS whenever the server offers it; credentials
	// are only sent encrypted, or to localhost) or smtps://user:password@host:465 (TLS from the start). The
	// port defaults to 587 for smtp and 465 for smtps. No default.
	URL string
	// From is the sender, "Name <address>" or a bare address. No default.
	From string
}

// ConfigFromEnv reads the configuration from environment variables (the executor's Main passes os.Getenv).
// A value that cannot be used does not stop the executor: Problems lists it, Main reports it at start, and
// the tools that need it answer not_configured, naming the variable.
func ConfigFromEnv(getenv func(string) string) Config {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	llm, llmErr := llmconfig.FromEnv(getenv)
	return Config{
		TimeZone:      get(EnvTimeZone),
		BusinessHours: get(EnvBusinessHours),
		PhoneRegion:   strings.ToUpper(get(phone.EnvRegion)),
		SMS: TwilioConfig{
			AccountSID:  get(EnvTwilioAccountSID),
			AuthToken:   get(EnvTwilioAuthToken),
			From:        get(EnvSMSFrom),
			BaseURL:     get(EnvTwilioBaseURL),
			CountryCode: get(EnvSMSCountryCode),
		},
		Email: SMTPConfig{
			URL:  get(EnvSMTPURL),
			From: get(EnvEmailFrom),
		},
		FileStore: get(filestore.EnvDir),
		LLM:       llm,
		LLMError:  llmErr,
		Business:  letterheadFromEnv(get),
	}
}

// Problems lists the settings that are set but cannot be used, each error naming its variable: the ones the
// tools that need them answer not_configured with.
func (c Config) Problems() []error {
	c = c.WithDefaults()
	var problems []error
	add := func(err error) {
		if err != nil {
			problems = append(problems, err)
		}
	}
	_, err := c.location()
	add(err)
	_, err = c.ResolvePhoneRegion()
	add(err)
	if c.BusinessHours != "" {
		_, err = parseWorkingHours(c.BusinessHours)
		add(err)
	}
	add(c.SMS.validate())
	if c.Email.URL != "" {
		_, err = ParseSMTPURL(c.Email.URL)
		add(err)
	}
	if c.Email.From != "" {
		_, err = parseEmailFrom(c.Email.From)
		add(err)
	}
	return append(problems, llmtext.ConfigProblems(c.LLMError)...)
}

// WithDefaults returns the config with defaults in place of zero values.
func (c Config) WithDefaults() Config {
	if c.TimeZone == "" {
		c.TimeZone = TimeZoneDefault
	}
	if c.SMS.BaseURL == "" {
		c.SMS.BaseURL = TwilioBaseURLDefault
	}
	c.SMS.BaseURL = strings.TrimRight(c.SMS.BaseURL, "/")
	c.SMS.CountryCode = strings.TrimPrefix(c.SMS.CountryCode, "+")
	if c.SMS.HTTPClient == nil {
		c.SMS.HTTPClient = &http.Client{}
	}
	if c.FileStore == "" {
		c.FileStore = filestore.DefaultDir
	}
	return c
}

// ResolvePhoneRegion resolves PhoneRegion with the deprecated SMS.CountryCode (phone.ResolveRegion).
func (c Config) ResolvePhoneRegion() (string, error) {
	return phone.ResolveRegion(c.PhoneRegion, c.SMS.CountryCode)
}

// location resolves TimeZone, as the os pack does (a value both packs cannot use is reported once).
func (c Config) location() (*time.Location, error) {
	return ospack.LoadTimeZone(c.TimeZone)
}

// providers lists the outside providers of the configuration and what each one lacks, for the os pack's
// health check (ForOS).
func (c Config) providers() []ospack.ProviderHealth {
	errText := func(err error) *string {
		if err == nil {
			return nil
		}
		s := err.Error()
		return &s
	}
	sms := ospack.ProviderHealth{Name: "sms", RequiredEnv: smsRequiredEnv, Missing: c.SMS.missing()}
	if len(sms.Missing) == 0 {
		sms.Error = errText(c.SMS.validate())
	}
	email := ospack.ProviderHealth{Name: "email", RequiredEnv: emailRequiredEnv, Missing: c.Email.missing()}
	if len(email.Missing) == 0 {
		_, err := c.Email.parse()
		email.Error = errText(err)
	}
	llm := ospack.ProviderHealth{Name: "llm", RequiredEnv: []string{llmconfig.EnvModel, llmconfig.EnvAPIKey}, Missing: c.LLM.Missing(),
		Error: errText(c.LLMError)}
	return []ospack.ProviderHealth{sms, email, llm}
}

// missing lists the required variables that are empty.
func (c TwilioConfig) missing() []string {
	var m []string
	for i, v := range []string{c.AccountSID, c.AuthToken, c.From} {
		if v == "" {
			m = append(m, smsRequiredEnv[i])
		}
	}
	return m
}

func (c TwilioConfig) validate() error {
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%s=%q is not an http(s) URL", EnvTwilioBaseURL, c.BaseURL)
	}
	return nil
}

func (c SMTPConfig) missing() []string {
	var m []string
	for i, v := range []string{c.URL, c.From} {
		if v == "" {
			m = append(m, emailRequiredEnv[i])
		}
	}
	return m
}

// SMTPServer is GEM_SMTP_URL parsed: smtp://user:password@host:587 (STARTTLS whenever offered) or
// smtps://user:password@host:465 (TLS from the start). The integrations pack's health check reads it too.
type SMTPServer struct {
	Host        string
	Addr        string // host:port, the port defaulting to 587 (smtp) or 465 (smtps)
	ImplicitTLS bool
	User        *url.Userinfo // nil without credentials
}

// ParseSMTPURL reads an SMTP server URL. Its errors never repeat the URL (it may hold a password).
func ParseSMTPURL(raw string) (SMTPServer, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return SMTPServer{}, fmt.Errorf("%s is not a URL like smtp://user:password@host:587", EnvSMTPURL)
	}
	s := SMTPServer{Host: u.Hostname(), User: u.User}
	port := u.Port()
	switch u.Scheme {
	case "smtp":
		port = cmp.Or(port, "587")
	case "smtps":
		s.ImplicitTLS, port = true, cmp.Or(port, "465")
	default:
		return SMTPServer{}, fmt.Errorf("%s must start with smtp:// or smtps://", EnvSMTPURL)
	}
	if s.Host == "" {
		return SMTPServer{}, fmt.Errorf("%s has no host", EnvSMTPURL)
	}
	s.Addr = net.JoinHostPort(s.Host, port)
	return s, nil
}

// smtpServer is a parsed SMTPConfig: the server and the sender.
type smtpServer struct {
	SMTPServer
	from *mail.Address
}

func (c SMTPConfig) parse() (*smtpServer, error) {
	server, err := ParseSMTPURL(c.URL)
	if err != nil {
		return nil, err
	}
	s := &smtpServer{SMTPServer: server}
	if s.from, err = parseEmailFrom(c.From); err != nil {
		return nil, err
	}
	return s, nil
}

// parseEmailFrom reads GEM_EMAIL_FROM.
func parseEmailFrom(from string) (*mail.Address, error) {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not an email address: %w", EnvEmailFrom, from, err)
	}
	return a, nil
}
