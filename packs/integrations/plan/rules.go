// Package integrationsplan is the integrations pack's side in the brain: the rules planner's rules for its
// tools, the sentences the answer says of their calls, and the planning of HighLevel's webhook events (which
// calls an event makes). All are typed against the packs' contracts (integrationspack, and the business and
// os packs' for the calls events make).
package integrationsplan

import (
	"regexp"
	"strings"
	"time"

	integrationspack "github.com/gemhq/gem/packs/integrations"

	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
)

// Rules are the pack's rules, in the order they are tried: HighLevel (LeadConnector), with every phrasing
// GEM's rules planner knew ("highlevel status", "sync highlevel contacts since 2026-01-01 dry run", ...), then
// the other providers.
var Rules = []planner.Rule{
	// HighLevel (LeadConnector).
	planner.NoInputRule("highlevel_health", integrationspack.HighLevelHealthCheck, "check the HighLevel connection",
		[]string{"highlevel status", "is highlevel working?"},
		`^(?:please\s+)?(?:check\s+(?:the\s+)?)?(?:`+highLevelPattern+`)(?:\s+api)?\s+(?:status|health(?:\s*check)?|connection)\s*[.!?]*$`,
		`^(?:please\s+)?check\s+(?:the\s+)?(?:`+highLevelPattern+`)\s*[.!?]*$`,
		`^is\s+(?:`+highLevelPattern+`)\s+(?:working|connected|up|ok|okay)\s*\??$`),
	{
		Name: "highlevel_sync_contacts", Tool: integrationspack.HighLevelSyncContacts,
		Help:     "sync contacts from HighLevel (since a date; dry run to preview)",
		Examples: []string{"sync highlevel contacts", "sync highlevel contacts since 2026-01-01", "sync highlevel contacts dry run"},
		Patterns: []string{`^(?:please\s+)?(?P<pre>(?:dry[\s-]*run|test|preview)\s+)?(?:(?:sync|import)\s+(?:the\s+)?(?:` + highLevelPattern + `)\s+contacts|(?:` + highLevelPattern + `)\s+contacts?(?:\s+sync)?|pull\s+(?:the\s+)?contacts\s+from\s+(?:` + highLevelPattern + `))(?P<rest>.*)$`},
		Build: func(m *planner.Match) (any, error) {
			var in integrationspack.HighLevelSyncContactsInput
			rest := m.Group("rest")
			if sm := syncSinceRe.FindStringSubmatchIndex(rest); sm != nil {
				since, err := syncSince(m, rest[sm[2]:sm[3]])
				if err != nil {
					return nil, err
				}
				// Whole seconds, as the rule has always planned it.
				since = since.Truncate(time.Second)
				in.Since = &since
				rest = rest[:sm[0]] + rest[sm[1]:]
			}
			if m.Group("pre") != "" || dryRunRe.MatchString(rest) {
				in.DryRun = true
				rest = dryRunRe.ReplaceAllString(rest, "")
			}
			if strings.Trim(rest, " .!") != "" {
				return nil, planner.ErrNoMatch
			}
			return in, nil
		},
	},
	planner.NoInputRule("highlevel_queue", integrationspack.HighLevelProcessQueue, "retry what is waiting in the HighLevel sync queue",
		[]string{"process the highlevel sync queue"},
		`^(?:please\s+)?(?:process|run|flush|drain|retry)\s+(?:the\s+)?(?:`+highLevelPattern+`)\s+(?:sync\s+)?queue\s*[.!]*$`),
	{
		Name: "highlevel_sync_quote", Tool: integrationspack.HighLevelSyncQuote,
		Help:     "send a quote to a HighLevel contact",
		Examples: []string{"sync the quote to highlevel contact hl-12345"},
		Patterns: []string{`^(?:please\s+)?(?:sync|push|send)\s+(?:the\s+)?quote(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:to|with)\s+(?:` + highLevelPattern + `)(?:\s+contact\s+(?P<contact>\S+))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			contact, err := highLevelContact(m)
			if err != nil {
				return nil, err
			}
			return integrationspack.HighLevelSyncQuoteInput{QuoteID: m.ID(), HighLevelContactID: contact}, nil
		},
	},
	{
		Name: "highlevel_sync_inspection", Tool: integrationspack.HighLevelSyncInspection,
		Help:     "send an inspection to a HighLevel contact",
		Examples: []string{"sync the inspection to highlevel contact hl-12345"},
		Patterns: []string{`^(?:please\s+)?(?:sync|push|send)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:to|with)\s+(?:` + highLevelPattern + `)(?:\s+contact\s+(?P<contact>\S+))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			contact, err := highLevelContact(m)
			if err != nil {
				return nil, err
			}
			return integrationspack.HighLevelSyncInspectionInput{InspectionID: m.ID(), HighLevelContactID: contact}, nil
		},
	},
	{
		Name: "highlevel_stage", Tool: integrationspack.HighLevelUpdateStage,
		Help:     "move a HighLevel contact's opportunity to a stage",
		Examples: []string{"move highlevel contact hl-12345 to quoted"},
		Patterns: []string{`^(?:please\s+)?(?:move|set|update)\s+(?:the\s+)?(?:` + highLevelPattern + `)\s+(?:contact|opportunity|lead)\s+(?P<contact>\S+)\s+(?:to|as)\s+(?P<stage>[\w\s-]+?)\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			stage, err := planner.EnumValue(m.EnumValues("stage"), "stage", m.Group("stage"))
			if err != nil {
				return nil, err
			}
			return integrationspack.HighLevelUpdateStageInput{HighLevelContactID: m.Group("contact"), Stage: stage}, nil
		},
	},
	// Other providers.
	planner.NoInputRule("sms_health", integrationspack.SMSProviderHealth, "check the SMS provider",
		[]string{"is sms working?"},
		`^(?:please\s+)?(?:check\s+(?:the\s+)?sms(?:\s+provider)?(?:\s+health|\s+status)?|is\s+(?:the\s+)?sms(?:\s+provider)?\s+(?:working|up|ok|okay|configured)|sms\s+(?:provider\s+)?(?:health|status))\s*[.!?]*$`),
	planner.NoInputRule("email_health", integrationspack.EmailProviderHealth, "check the email provider",
		[]string{"is email working?"},
		`^(?:please\s+)?(?:check\s+(?:the\s+)?e-?mail(?:\s+provider)?(?:\s+health|\s+status)?|is\s+(?:the\s+)?e-?mail(?:\s+provider)?\s+(?:working|up|ok|okay|configured)|e-?mail\s+(?:provider\s+)?(?:health|status))\s*[.!?]*$`),
	{
		Name: "drive_search", Tool: integrationspack.DriveSearch,
		Help:     "search Google Drive",
		Examples: []string{"search drive for Baker job photos", "find the insurance certificate in google drive"},
		Patterns: []string{
			`^(?:please\s+)?(?:search|look\s+in|look\s+through)\s+(?:the\s+|my\s+|our\s+)?(?:google\s+)?drive\s+(?:for\s+)?(?P<query>.+?)\s*[.!?]*$`,
			`^(?:please\s+)?(?:find|search\s+for|look\s+for)\s+(?P<query>.+?)\s+(?:in|on)\s+(?:the\s+|my\s+|our\s+)?(?:google\s+)?drive\s*[.!?]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			return integrationspack.DriveSearchInput{Query: m.Group("query")}, nil
		},
	},
	{
		Name: "import_photos", Tool: integrationspack.PhotosImportLinks,
		Help:     "import Google Photos links",
		Examples: []string{"import photos https://photos.app.goo.gl/abc123"},
		Patterns: []string{`^(?:please\s+)?import\s+(?:the\s+)?(?:google\s+)?photos?(?:\s+links?)?\s*[:\-]?\s*(?P<links>(?:https?://\S+[\s,]*(?:and\s+)?)+)$`},
		Build: func(m *planner.Match) (any, error) {
			return integrationspack.PhotosImportLinksInput{Links: planner.LinksIn(m.Group("links"))}, nil
		},
	},
	{
		Name: "analytics_summary", Tool: integrationspack.AnalyticsPullSummary,
		Help:     "the website analytics for a period (the last 30 days unless you say)",
		Examples: []string{"pull the analytics summary for last month"},
		Patterns: []string{`^(?:please\s+)?(?:pull|get|show|give\s+me|fetch)\s+(?:me\s+)?(?:the\s+|an?\s+|our\s+)?(?:website\s+|google\s+|web\s+)?analytics(?:\s+summary|\s+report|\s+numbers)?(?P<period>.*?)\s*[.!?]*$`},
		Build: func(m *planner.Match) (any, error) {
			from, to, err := m.Period(true)
			if err != nil {
				return nil, err
			}
			return integrationspack.AnalyticsPullSummaryInput{From: from, To: to}, nil
		},
	},
	{
		Name: "ads_summary", Tool: integrationspack.AdsPullSummary,
		Help:     "how the Google Ads or Meta ads did in a period (the last 30 days unless you say)",
		Examples: []string{"show the google ads results this month", "get the meta ads summary"},
		Patterns: []string{`^(?:please\s+)?(?:pull|get|show|give\s+me|fetch|how\s+did)\s+(?:me\s+)?(?:the\s+|our\s+)?(?P<channel>google|meta|facebook|instagram)\s+ads?\s*(?:summary|report|results|performance|do|go)?(?P<period>.*?)\s*[.!?]*$`},
		Build: func(m *planner.Match) (any, error) {
			from, to, err := m.Period(true)
			if err != nil {
				return nil, err
			}
			channel := integrationspack.ChannelMeta
			if strings.EqualFold(m.Group("channel"), "google") {
				channel = integrationspack.ChannelGoogleAds
			}
			return integrationspack.AdsPullSummaryInput{Channel: channel, From: from, To: to}, nil
		},
	},
}

// Sentences are what the answer says of the pack's succeeded calls: none of its tools has a sentence of its
// own yet (plan_test.go says why); their answers are the generic one, from the receipt's summary.
var Sentences = run.Sentences{}

const highLevelPattern = `high\s*level|ghl|lead\s*connector`

var (
	syncSinceRe = regexp.MustCompile(`(?i)\s*\bsince\s+(` + planner.DayPattern + `(?:T\d+:\d+:\d+(?:\.\d+)?(?:Z|[+-]\d+:\d+))?)`)
	dryRunRe    = regexp.MustCompile(`(?i)\s*\b(?:as\s+a\s+)?dry[\s-]*run\b`)
)

// syncSince is a sync's since: a day (its midnight), or an RFC 3339 time. One that cannot be is a question.
func syncSince(m *planner.Match, said string) (time.Time, error) {
	day, clock, timed := strings.Cut(said, "T")
	since, err := m.Day(day, "since", 0)
	if err != nil || !timed {
		return since, err
	}
	if since, err = time.Parse(time.RFC3339, said); err != nil {
		return time.Time{}, planner.NotATime("since", clock, "write it like 2026-01-31T09:30:00+11:00")
	}
	return since, nil
}

// highLevelContact is the HighLevel contact a sync of a record goes to, which is asked for when missing.
func highLevelContact(m *planner.Match) (string, error) {
	contact := m.Group("contact")
	if contact == "" {
		return "", planner.Missing("highlevel_contact_id", `which HighLevel contact? End with "to highlevel contact <contact id>"`)
	}
	return contact, nil
}
