package businesspack

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/packs/internal/llmsettings"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry/phone"
	"github.com/gemhq/gem/registry/settings"
)

// The business pack's settings: Main reads them once (ConfigFromEnv), reports their Problems at start and
// hands the Config to the pack's handlers (businesshandlers.RegisterWithOS, with the os pack's time zone) and to
// the integrations pack's, which probes the same SMS and email providers. docs/business-pack.md and the executor's usage text list each variable
// with its default.

// Defaults of Config.
const (
	// TimeZoneDefault is the business's time zone unless GEM_BUSINESS_TIMEZONE says otherwise: the os
	// pack's setting, which this pack is given.
	TimeZoneDefault = ospack.TimeZoneDefault
	// TwilioBaseURLDefault is Twilio's REST API.
	TwilioBaseURLDefault = "https://api.twilio.com"
	// BusinessHoursDefault are the working hours unless GEM_BUSINESS_HOURS says otherwise.
	BusinessHoursDefault = "Mon-Fri 07:00-17:00"
	// BusinessNameDefault is the business's name on documents unless GEM_BUSINESS_NAME says otherwise.
	BusinessNameDefault = "GEM Roofing"
	// FileStoreDefault is the file store's directory unless GEM_FILE_STORE says otherwise, relative to the
	// working directory: the executor's file store's default (executor/filestore.DefaultDir; the contract
	// does not import the executor, and businesshandlers's tests check that the two agree).
	FileStoreDefault = ".gem/files"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvTwilioAccountSID = "GEM_SMS_TWILIO_ACCOUNT_SID"
	EnvTwilioAuthToken  = "GEM_SMS_TWILIO_AUTH_TOKEN"
	EnvSMSFrom          = "GEM_SMS_FROM"
	EnvTwilioBaseURL    = "GEM_SMS_TWILIO_BASE_URL"
	EnvSMSCountryCode   = phone.EnvCallingCode
	EnvSMTPURL          = "GEM_SMTP_URL"
	EnvEmailFrom        = "GEM_EMAIL_FROM"
	// EnvBusinessHours is the variable of Config.BusinessHours.
	EnvBusinessHours = "GEM_BUSINESS_HOURS"
	// EnvFileStore is the variable of Config.FileStore: executor/filestore.EnvDir, which the executor's MCP
	// servers' files are stored under too.
	EnvFileStore = "GEM_FILE_STORE"
	// The letterhead's (Config.Business).
	EnvBusinessName    = "GEM_BUSINESS_NAME"
	EnvBusinessABN     = "GEM_BUSINESS_ABN"
	EnvBusinessPhone   = "GEM_BUSINESS_PHONE"
	EnvBusinessEmail   = "GEM_BUSINESS_EMAIL"
	EnvBusinessAddress = "GEM_BUSINESS_ADDRESS"
)

// SMSRequiredEnv and EmailRequiredEnv are what comms.send_sms and comms.send_email need (in the order
// TwilioConfig.Missing and SMTPConfig.Missing list them). Copy before appending.
var (
	SMSRequiredEnv   = []string{EnvTwilioAccountSID, EnvTwilioAuthToken, EnvSMSFrom}
	EmailRequiredEnv = []string{EnvSMTPURL, EnvEmailFrom}
)

// Config configures the business pack. The zero value works: the SMS and email providers are not
// configured (their tools answer not_configured) and dates follow TimeZoneDefault.
type Config struct {
	// TimeZone is the business's IANA time zone. It decides what "today" is: a quote's validity, an
	// invoice's issue and due dates, and whether an invoice is overdue. It is the os pack's setting
	// (ospack.Config.TimeZone): ConfigFromEnv leaves it empty and businesshandlers.RegisterWithOS sets it, so
	// the two packs never disagree, and only the os pack reports a value that cannot be used. Defaults to
	// TimeZoneDefault.
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
	// website packs are written (EnvFileStore). Defaults to FileStoreDefault.
	FileStore string

	// LLM configures the tools that write text (marketing.generate_*, media.generate_alt_text and
	// generate_caption); without a provider they answer not_configured. Read from the GEM_LLM_* variables.
	LLM llmconfig.Config
	// LLMError is what was wrong with GEM_LLM_* when read from the environment; the LLM tools then answer
	// not_configured with it.
	LLMError error

	// Business is how documents and customer messages name the business. Read from the GEM_BUSINESS_*
	// variables; the name defaults to BusinessNameDefault.
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
	llm, llmErr := llmsettings.FromEnv(getenv)
	return Config{
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
		FileStore: get(EnvFileStore),
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
	_, err := c.ResolvePhoneRegion()
	add(err)
	if c.BusinessHours != "" {
		_, err = ParseWorkingHours(c.BusinessHours)
		add(err)
	}
	add(c.SMS.Validate())
	if c.Email.URL != "" {
		_, err = ParseSMTPURL(c.Email.URL)
		add(err)
	}
	if c.Email.From != "" {
		_, err = ParseEmailFrom(c.Email.From)
		add(err)
	}
	return append(problems, llmconfig.Problems(c.LLMError)...)
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
		c.FileStore = FileStoreDefault
	}
	return c
}

// ResolvePhoneRegion resolves PhoneRegion with the deprecated SMS.CountryCode (phone.ResolveRegion).
func (c Config) ResolvePhoneRegion() (string, error) {
	return phone.ResolveRegion(c.PhoneRegion, c.SMS.CountryCode)
}

// Location resolves TimeZone, as the os pack does (ospack.LoadTimeZone: a value both packs cannot use is
// reported once).
func (c Config) Location() (*time.Location, error) {
	return ospack.LoadTimeZone(c.TimeZone)
}

// Missing lists the required variables that are empty (of SMSRequiredEnv).
func (c TwilioConfig) Missing() []string {
	var m []string
	for i, v := range []string{c.AccountSID, c.AuthToken, c.From} {
		if v == "" {
			m = append(m, SMSRequiredEnv[i])
		}
	}
	return m
}

// Validate refuses a BaseURL that is not an http(s) URL, naming its variable.
func (c TwilioConfig) Validate() error {
	return settings.HTTPURLProblem(EnvTwilioBaseURL, c.BaseURL)
}

// Missing lists the required variables that are empty (of EmailRequiredEnv).
func (c SMTPConfig) Missing() []string {
	var m []string
	for i, v := range []string{c.URL, c.From} {
		if v == "" {
			m = append(m, EmailRequiredEnv[i])
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

// ParseEmailFrom reads GEM_EMAIL_FROM.
func ParseEmailFrom(from string) (*mail.Address, error) {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not an email address: %w", EnvEmailFrom, from, err)
	}
	return a, nil
}

// Letterhead is the business as its documents (quote PDFs) and customer messages name it. Empty details
// are left off.
type Letterhead struct {
	// Name is the trading name. Defaults to BusinessNameDefault.
	Name string
	// ABN is the Australian Business Number, printed on quotes when set. No default.
	ABN string
	// Phone is the number customers call. No default.
	Phone string
	// Email is the address customers write to. No default.
	Email string
	// Address is the business's postal or street address. No default.
	Address string
}

func letterheadFromEnv(get func(string) string) Letterhead {
	return Letterhead{
		Name: get(EnvBusinessName), ABN: get(EnvBusinessABN), Phone: get(EnvBusinessPhone),
		Email: get(EnvBusinessEmail), Address: get(EnvBusinessAddress),
	}
}

// WithDefaults returns the letterhead with the default name in place of an empty one.
func (l Letterhead) WithDefaults() Letterhead {
	if strings.TrimSpace(l.Name) == "" {
		l.Name = BusinessNameDefault
	}
	return l
}

// WorkingDay is a day's working hours, in minutes after midnight.
type WorkingDay struct{ Open, Close int }

// WorkingHours are the hours of each weekday (indexed by time.Weekday); nil is a day off.
type WorkingHours struct {
	Days [7]*WorkingDay
	// Spec is the text they were read from.
	Spec string
}

var weekdayNames = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// ParseWorkingHours reads working hours like "Mon-Fri 07:00-17:00; Sat 08:00-12:00": parts separated by
// semicolons, each days (a day, a range of days, or a comma-separated list of either) and a time range.
func ParseWorkingHours(spec string) (WorkingHours, error) {
	wh := WorkingHours{Spec: spec}
	bad := func(format string, args ...any) (WorkingHours, error) {
		return wh, fmt.Errorf("%s=%q: %s (like %q)", EnvBusinessHours, spec, fmt.Sprintf(format, args...), "Mon-Fri 07:00-17:00; Sat 08:00-12:00")
	}
	for _, part := range strings.Split(spec, ";") {
		fields := strings.Fields(part)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return bad("%q is not days and a time range", strings.TrimSpace(part))
		}
		from, to, ok := strings.Cut(fields[1], "-")
		open, err1 := clockMinutes(from)
		closing, err2 := clockMinutes(to)
		if !ok || err1 != nil || err2 != nil || closing <= open {
			return bad("%q is not a time range such as 07:00-17:00", fields[1])
		}
		for _, item := range strings.Split(strings.ToLower(fields[0]), ",") {
			first, last, isRange := strings.Cut(item, "-")
			d1, ok1 := weekdayNames[first]
			d2, ok2 := weekdayNames[last]
			if !isRange {
				d2, ok2 = d1, ok1
			}
			if !ok1 || !ok2 {
				return bad("%q is not a day (Mon ... Sun) or a range of days", item)
			}
			for d := d1; ; d = (d + 1) % 7 {
				if wh.Days[d] != nil {
					return bad("%s is given twice", d)
				}
				wh.Days[d] = &WorkingDay{open, closing}
				if d == d2 {
					break
				}
			}
		}
	}
	if wh.Days == [7]*WorkingDay{} {
		return bad("there are no working days")
	}
	return wh, nil
}

// clockMinutes reads "07:30" as minutes after midnight (24:00 is the end of the day).
func clockMinutes(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh*60+mm > 24*60 {
		return 0, fmt.Errorf("%q is not a time of day", s)
	}
	return hh*60 + mm, nil
}

// Variables are the variables ConfigFromEnv reads, with their defaults, as docs/business-pack.md lists them:
// the business's own and the GEM_LLM_* its tools that write text use. Its time zone is the os pack's
// (ospack.Variables), which Main hands in (businesshandlers.RegisterWithOS).
func Variables() []settings.Variable {
	return []settings.Variable{
		{Name: EnvBusinessName, Default: BusinessNameDefault, Description: "the business's name on documents and messages"},
		{Name: EnvBusinessABN, Default: settings.Unset, Description: "ABN printed on quotes and invoices"},
		{Name: EnvBusinessPhone, Default: settings.Unset, Description: "phone number on documents and messages"},
		{Name: EnvBusinessEmail, Default: settings.Unset, Description: "email address on documents and messages"},
		{Name: EnvBusinessAddress, Default: settings.Unset, Description: "address on documents"},
		{Name: EnvBusinessHours, Default: BusinessHoursDefault, Description: "working hours, for " + FindSlots + " and inspection windows"},
		{Name: EnvTwilioAccountSID, Default: settings.Unset, Description: "Twilio account, for " + SendSMS},
		{Name: EnvTwilioAuthToken, Default: settings.Unset, Description: "Twilio auth token, for " + SendSMS},
		{Name: EnvSMSFrom, Default: settings.Unset, Description: "SMS sender, for " + SendSMS},
		{Name: EnvTwilioBaseURL, Default: TwilioBaseURLDefault, Description: "Twilio's API"},
		{Name: phone.EnvRegion, Default: phone.RegionDefault, Description: "region of phone numbers typed without a country code: leads are one per number in E.164, SMS go there"},
		{Name: EnvSMSCountryCode, Default: settings.Unset, Description: "deprecated: the calling code of " + phone.EnvRegion + ", which replaces it (both set must agree)"},
		{Name: EnvSMTPURL, Default: settings.Unset, Description: "smtp:// or smtps:// server, for " + SendEmail},
		{Name: EnvEmailFrom, Default: settings.Unset, Description: "email sender, for " + SendEmail},
		{Name: EnvFileStore, Default: FileStoreDefault + " in the working folder", Description: "file store for the PDFs and packs tools write and the files MCP servers return"},
		{Name: llmconfig.EnvProvider, Default: llmconfig.ProviderDefault, Description: "openai or anthropic (the brain reads the same GEM_LLM_*)"},
		{Name: llmconfig.EnvBaseURL, Default: "the provider's API", Description: "LLM API base URL"},
		{Name: llmconfig.EnvAPIKey, Default: settings.Unset, Description: "LLM API key, for the tools that write text"},
		{Name: llmconfig.EnvModel, Default: settings.Unset, Description: "LLM model, for the tools that write text"},
		{Name: llmconfig.EnvMaxTokens, Default: "the tool's bound", Description: "bound on an LLM answer"},
		{Name: llmconfig.EnvTimeout, Default: "60s", Description: "bound on one LLM request (a call is also bounded by its timeout_ms)"},
		{Name: llmconfig.EnvStepTimeout, Default: "3 × GEM_LLM_TIMEOUT", Description: "the brain's bound on an LLM step; checked here, not used (a call is bounded by its timeout_ms)"},
		{Name: llmconfig.EnvRetryAfterMax, Default: "10s", Description: "the brain's longest wait for a provider's Retry-After; checked here, not used"},
	}
}
