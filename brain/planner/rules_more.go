package planner

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// moreRules plan media, marketing and the outside integrations (HighLevel among them, with every phrasing
// GEM's rules planner knew: "highlevel status", "sync highlevel contacts since 2026-01-01 dry run", ...).
var moreRules = []Rule{
	// Media.
	{
		Name: "register_asset", Tool: "media.register_asset",
		Help:     "register a photo, video or document (for a job, in a suburb)",
		Examples: []string{"register photo https://photos.example.com/baker/north-face.jpg for the job in Newtown"},
		Patterns: []string{`^(?:please\s+)?(?:register|add|upload|save)\s+(?:an?\s+|the\s+)?(?P<type>photo|picture|image|video|document|doc|file)\s+(?P<ref>` + fileRefPattern + `)(?P<rest>.*)$`},
		Build: func(m *Match) (any, error) {
			in := map[string]any{"file_ref": m.Group("ref"), "asset_type": assetType(m.Group("type"))}
			rest := m.Group("rest")
			if id := uuidRe.FindString(rest); id != "" && HasWord(rest, "job") {
				in["job_id"] = strings.ToLower(id)
			}
			if place := PlaceIn(rest); place != "" {
				in["suburb"] = place
			}
			return in, nil
		},
	},
	{
		Name: "tag_asset", Tool: "media.tag_asset",
		Help:     "tag a photo or file",
		Examples: []string{"tag asset 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 with roof, before, north face"},
		Patterns: []string{`^(?:please\s+)?tag\s+(?:the\s+)?(?:asset|photo|picture|image|file)(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:with|as)\s+(?P<tags>.+)$`},
		Build: func(m *Match) (any, error) {
			return withID(m, "asset_id", map[string]any{"tags": SplitList(m.Group("tags"))}), nil
		},
	},
	{
		Name: "alt_text", Tool: "media.generate_alt_text",
		Help:     "write alt text for a photo",
		Examples: []string{"write alt text for asset 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:write|generate|create|make)\s+(?:the\s+|some\s+)?alt[\s-]*text\s+(?:for\s+)?(?:the\s+)?(?:asset|photo|picture|image)?\s*(?P<id>` + UUIDPattern + `)?(?:\s*,?\s*(?:up\s+to|max(?:imum)?|at\s+most)\s+(?P<max>\d+)\s+(?:characters|chars))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "asset_id", map[string]any{})
			if s := m.Group("max"); s != "" {
				n, _ := strconv.Atoi(s)
				in["max_length"] = min(max(n, 40), 200)
			}
			return in, nil
		},
	},
	{
		Name: "caption", Tool: "media.generate_caption",
		Help:     "write a caption for a photo (for the website, GMB or Meta)",
		Examples: []string{"write a caption for asset 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 for instagram"},
		Patterns: []string{`^(?:please\s+)?(?:write|generate|create|make)\s+(?:an?\s+|the\s+)?caption\s+(?:for\s+)?(?:the\s+)?(?:asset|photo|picture|image)?\s*(?P<id>` + UUIDPattern + `)?(?:\s+(?:for|on)\s+(?:the\s+)?(?P<platform>website|gmb|google(?:\s+business)?|facebook|instagram|meta|other))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "asset_id", map[string]any{})
			switch p := strings.ToLower(m.Group("platform")); {
			case p == "":
			case strings.HasPrefix(p, "google") || p == "gmb":
				in["platform"] = "gmb"
			case p == "facebook" || p == "instagram" || p == "meta":
				in["platform"] = "meta"
			default:
				in["platform"] = p
			}
			return in, nil
		},
	},
	{
		Name: "rename_map", Tool: "media.propose_rename_map",
		Help:     "propose clear file names for photos (nothing is renamed)",
		Examples: []string{"propose names for assets 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10, 0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f"},
		Patterns: []string{`^(?:please\s+)?(?:propose|suggest)\s+(?:new\s+|better\s+)?(?:file\s*)?names\s+for\s+(?:the\s+)?(?:assets?|photos?|pictures?|images?|files?)\s+(?P<ids>.+)$`},
		Build: func(m *Match) (any, error) {
			ids := UUIDsIn(m.Group("ids"))
			if len(ids) == 0 {
				return nil, Missing("asset_ids", "which assets? Give their ids")
			}
			return map[string]any{"asset_ids": ids, "dry_run_only": true}, nil
		},
	},
	{
		Name: "website_pack", Tool: "media.export_website_pack",
		Help:     "export photos as a website pack (a zip with alt texts and captions)",
		Examples: []string{"export a website pack of assets 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10, 0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f"},
		Patterns: []string{`^(?:please\s+)?(?:export|make|create|build)\s+(?:an?\s+|the\s+)?website\s+pack\s+(?:of|for|with)\s+(?:the\s+)?(?:assets?|photos?|pictures?|images?)?\s*(?P<ids>.+)$`},
		Build: func(m *Match) (any, error) {
			ids := UUIDsIn(m.Group("ids"))
			if len(ids) == 0 {
				return nil, Missing("asset_ids", "which assets? Give their ids")
			}
			return map[string]any{"asset_ids": ids}, nil
		},
	},
	// Marketing.
	{
		Name: "gmb_post", Tool: "marketing.generate_gmb_post",
		Help:     "draft a Google Business Profile post on a topic, for a suburb or region",
		Examples: []string{"write a gmb post about our roof restorations for Penrith"},
		Patterns: []string{`^(?:please\s+)?(?:write|draft|create|make|generate)\s+(?:an?\s+)?(?:gmb|google(?:\s+my)?\s+business(?:\s+profile)?)\s+post\s+(?:about|on)\s+(?P<rest>.+)$`},
		Build: func(m *Match) (any, error) {
			topic, region, err := topicAndRegion(m.Group("rest"))
			if err != nil {
				return nil, err
			}
			return map[string]any{"topic": topic, "suburb_or_region": region}, nil
		},
	},
	{
		Name: "meta_ads", Tool: "marketing.generate_meta_ad_pack",
		Help:     "draft Meta (Facebook, Instagram) ads for an offer, in a suburb or region",
		Examples: []string{"make a facebook ad pack for 10% off gutter guard in the Blue Mountains"},
		Patterns: []string{`^(?:please\s+)?(?:write|draft|create|make|generate)\s+(?:an?\s+|some\s+)?(?:meta|facebook|instagram|fb)\s+ads?(?:\s+pack)?\s+(?:for|about|on)\s+(?P<rest>.+)$`},
		Build: func(m *Match) (any, error) {
			offer, region, err := topicAndRegion(m.Group("rest"))
			if err != nil {
				return nil, err
			}
			return map[string]any{"offer": offer, "suburb_or_region": region}, nil
		},
	},
	{
		Name: "google_ads", Tool: "marketing.generate_google_ads_pack",
		Help:     "draft a Google Ads pack for a service, in a region",
		Examples: []string{"make a google ads pack for roof restoration in Western Sydney"},
		Patterns: []string{`^(?:please\s+)?(?:write|draft|create|make|generate)\s+(?:an?\s+|some\s+)?google\s+ads?(?:\s+pack)?\s+(?:for|about|on)\s+(?P<rest>.+)$`},
		Build: func(m *Match) (any, error) {
			service, region, err := topicAndRegion(m.Group("rest"))
			if err != nil {
				return nil, err
			}
			return map[string]any{"service": service, "region": region}, nil
		},
	},
	{
		Name: "case_study", Tool: "marketing.generate_case_study_from_job",
		Help:     "write a case study of a job (blog, short or website section)",
		Examples: []string{"write a case study for the job as a blog post"},
		Patterns: []string{`^(?:please\s+)?(?:write|draft|create|make|generate)\s+(?:an?\s+)?case\s+study(?:\s+(?:for|from|about|on|of)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s+(?:as\s+(?:an?\s+)?)?(?P<format>blog(?:\s+post)?|short|website\s+section))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "job_id", map[string]any{})
			switch f := strings.ToLower(m.Group("format")); {
			case strings.HasPrefix(f, "blog"):
				in["format"] = "blog"
			case f == "short":
				in["format"] = "short"
			case f != "":
				in["format"] = "website_section"
			}
			return in, nil
		},
	},
	{
		Name: "campaign_result", Tool: "marketing.log_campaign_result",
		Help:     "log a campaign's numbers (google ads, meta, gmb or other)",
		Examples: []string{"log campaign results for meta: 12 leads, 3 jobs, $450 spend"},
		Patterns: []string{`^(?:please\s+)?(?:log|record)\s+(?:the\s+|a\s+)?(?:campaign\s+)?results?\s+(?:for|from|of)\s+(?:the\s+)?(?P<channel>google\s+ads|google\s+business|gmb|meta|facebook|instagram|[\w-]+)(?:\s+campaign)?\s*[:\-]\s*(?P<metrics>.+)$`},
		Build: func(m *Match) (any, error) {
			metrics := map[string]any{}
			for _, sm := range metricRe.FindAllStringSubmatch(m.Group("metrics"), -1) {
				v, err := strconv.ParseFloat(strings.ReplaceAll(sm[2], ",", ""), 64)
				if err != nil {
					continue
				}
				metrics[Slug(sm[3])] = v
			}
			if len(metrics) == 0 {
				return nil, Missing("metrics", `which numbers? For example "12 leads, 3 jobs, $450 spend"`)
			}
			channel := adsChannel(m.Group("channel"))
			if _, err := m.Enum("channel", channel); err != nil {
				channel = "other"
			}
			return map[string]any{"channel": channel, "metrics": metrics}, nil
		},
	},
	// HighLevel (LeadConnector).
	NoInputRule("highlevel_health", "integrations.highlevel.health_check", "check the HighLevel connection",
		[]string{"highlevel status", "is highlevel working?"},
		`^(?:please\s+)?(?:check\s+(?:the\s+)?)?(?:`+highLevelPattern+`)(?:\s+api)?\s+(?:status|health(?:\s*check)?|connection)\s*[.!?]*$`,
		`^(?:please\s+)?check\s+(?:the\s+)?(?:`+highLevelPattern+`)\s*[.!?]*$`,
		`^is\s+(?:`+highLevelPattern+`)\s+(?:working|connected|up|ok|okay)\s*\??$`),
	{
		Name: "highlevel_sync_contacts", Tool: "integrations.highlevel.sync_contacts",
		Help:     "sync contacts from HighLevel (since a date; dry run to preview)",
		Examples: []string{"sync highlevel contacts", "sync highlevel contacts since 2026-01-01", "sync highlevel contacts dry run"},
		Patterns: []string{`^(?:please\s+)?(?P<pre>(?:dry[\s-]*run|test|preview)\s+)?(?:(?:sync|import)\s+(?:the\s+)?(?:` + highLevelPattern + `)\s+contacts|(?:` + highLevelPattern + `)\s+contacts?(?:\s+sync)?|pull\s+(?:the\s+)?contacts\s+from\s+(?:` + highLevelPattern + `))(?P<rest>.*)$`},
		Build: func(m *Match) (any, error) {
			in := map[string]any{}
			rest := m.Group("rest")
			if sm := syncSinceRe.FindStringSubmatchIndex(rest); sm != nil {
				since, err := syncSince(rest[sm[2]:sm[3]], m.Now, m.Location)
				if err != nil {
					return nil, err
				}
				in["since"] = since.Format(time.RFC3339)
				rest = rest[:sm[0]] + rest[sm[1]:]
			}
			if m.Group("pre") != "" || dryRunRe.MatchString(rest) {
				in["dry_run"] = true
				rest = dryRunRe.ReplaceAllString(rest, "")
			}
			if strings.Trim(rest, " .!") != "" {
				return nil, ErrNoMatch
			}
			return in, nil
		},
	},
	NoInputRule("highlevel_queue", "integrations.highlevel.process_sync_queue", "retry what is waiting in the HighLevel sync queue",
		[]string{"process the highlevel sync queue"},
		`^(?:please\s+)?(?:process|run|flush|drain|retry)\s+(?:the\s+)?(?:`+highLevelPattern+`)\s+(?:sync\s+)?queue\s*[.!]*$`),
	{
		Name: "highlevel_sync_quote", Tool: "integrations.highlevel.sync_quote",
		Help:     "send a quote to a HighLevel contact",
		Examples: []string{"sync the quote to highlevel contact hl-12345"},
		Patterns: []string{`^(?:please\s+)?(?:sync|push|send)\s+(?:the\s+)?quote(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:to|with)\s+(?:` + highLevelPattern + `)(?:\s+contact\s+(?P<contact>\S+))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			return highLevelSync(m, "quote_id")
		},
	},
	{
		Name: "highlevel_sync_inspection", Tool: "integrations.highlevel.sync_inspection",
		Help:     "send an inspection to a HighLevel contact",
		Examples: []string{"sync the inspection to highlevel contact hl-12345"},
		Patterns: []string{`^(?:please\s+)?(?:sync|push|send)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:to|with)\s+(?:` + highLevelPattern + `)(?:\s+contact\s+(?P<contact>\S+))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			return highLevelSync(m, "inspection_id")
		},
	},
	{
		Name: "highlevel_stage", Tool: "integrations.highlevel.update_lead_stage",
		Help:     "move a HighLevel contact's opportunity to a stage",
		Examples: []string{"move highlevel contact hl-12345 to quoted"},
		Patterns: []string{`^(?:please\s+)?(?:move|set|update)\s+(?:the\s+)?(?:` + highLevelPattern + `)\s+(?:contact|opportunity|lead)\s+(?P<contact>\S+)\s+(?:to|as)\s+(?P<stage>[\w\s-]+?)\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			stage, err := EnumValue(enumOf(m.Tool, "stage"), "stage", m.Group("stage"))
			if err != nil {
				return nil, err
			}
			return map[string]any{"highlevel_contact_id": m.Group("contact"), "stage": stage}, nil
		},
	},
	// Other providers.
	NoInputRule("sms_health", "integrations.sms_provider.health", "check the SMS provider",
		[]string{"is sms working?"},
		`^(?:please\s+)?(?:check\s+(?:the\s+)?sms(?:\s+provider)?(?:\s+health|\s+status)?|is\s+(?:the\s+)?sms(?:\s+provider)?\s+(?:working|up|ok|okay|configured)|sms\s+(?:provider\s+)?(?:health|status))\s*[.!?]*$`),
	NoInputRule("email_health", "integrations.email_provider.health", "check the email provider",
		[]string{"is email working?"},
		`^(?:please\s+)?(?:check\s+(?:the\s+)?e-?mail(?:\s+provider)?(?:\s+health|\s+status)?|is\s+(?:the\s+)?e-?mail(?:\s+provider)?\s+(?:working|up|ok|okay|configured)|e-?mail\s+(?:provider\s+)?(?:health|status))\s*[.!?]*$`),
	{
		Name: "drive_search", Tool: "integrations.google_drive.search",
		Help:     "search Google Drive",
		Examples: []string{"search drive for Baker job photos", "find the insurance certificate in google drive"},
		Patterns: []string{
			`^(?:please\s+)?(?:search|look\s+in|look\s+through)\s+(?:the\s+|my\s+|our\s+)?(?:google\s+)?drive\s+(?:for\s+)?(?P<query>.+?)\s*[.!?]*$`,
			`^(?:please\s+)?(?:find|search\s+for|look\s+for)\s+(?P<query>.+?)\s+(?:in|on)\s+(?:the\s+|my\s+|our\s+)?(?:google\s+)?drive\s*[.!?]*$`,
		},
		Build: func(m *Match) (any, error) { return map[string]any{"query": m.Group("query")}, nil },
	},
	{
		Name: "import_photos", Tool: "integrations.google_photos.import_links",
		Help:     "import Google Photos links",
		Examples: []string{"import photos https://photos.app.goo.gl/abc123"},
		Patterns: []string{`^(?:please\s+)?import\s+(?:the\s+)?(?:google\s+)?photos?(?:\s+links?)?\s*[:\-]?\s*(?P<links>(?:https?://\S+[\s,]*(?:and\s+)?)+)$`},
		Build:    func(m *Match) (any, error) { return map[string]any{"links": LinksIn(m.Group("links"))}, nil },
	},
	{
		Name: "analytics_summary", Tool: "integrations.analytics.pull_summary",
		Help:     "the website analytics for a period (the last 30 days unless you say)",
		Examples: []string{"pull the analytics summary for last month"},
		Patterns: []string{`^(?:please\s+)?(?:pull|get|show|give\s+me|fetch)\s+(?:me\s+)?(?:the\s+|an?\s+|our\s+)?(?:website\s+|google\s+|web\s+)?analytics(?:\s+summary|\s+report|\s+numbers)?(?P<period>.*?)\s*[.!?]*$`},
		Build:    func(m *Match) (any, error) { return periodInput(m, true) },
	},
	{
		Name: "ads_summary", Tool: "integrations.ads.pull_summary",
		Help:     "how the Google Ads or Meta ads did in a period (the last 30 days unless you say)",
		Examples: []string{"show the google ads results this month", "get the meta ads summary"},
		Patterns: []string{`^(?:please\s+)?(?:pull|get|show|give\s+me|fetch|how\s+did)\s+(?:me\s+)?(?:the\s+|our\s+)?(?P<channel>google|meta|facebook|instagram)\s+ads?\s*(?:summary|report|results|performance|do|go)?(?P<period>.*?)\s*[.!?]*$`},
		Build: func(m *Match) (any, error) {
			in, err := periodInput(m, true)
			if err != nil {
				return nil, err
			}
			in["channel"] = adsChannel(m.Group("channel"))
			return in, nil
		},
	},
}

const highLevelPattern = `high\s*level|ghl|lead\s*connector`

var (
	syncSinceRe = regexp.MustCompile(`(?i)\s*\bsince\s+(` + isoDatePattern + `(?:T\d+:\d+:\d+(?:\.\d+)?(?:Z|[+-]\d+:\d+))?)`)
	dryRunRe    = regexp.MustCompile(`(?i)\s*\b(?:as\s+a\s+)?dry[\s-]*run\b`)
	metricRe    = regexp.MustCompile(`(?i)(\$?)\s*(\d[\d,]*(?:\.\d+)?)\s*(?:in\s+)?([a-z][a-z ]*?)\s*(?:,|;|\band\b|$)`)
	regionRe    = regexp.MustCompile(`\s+(?:for|in|around|across)\s+(?:the\s+)?([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)\s*[.!]*$`)
)

// syncSince is a sync's since: a day (its midnight), or an RFC 3339 time. One that cannot be is a question.
func syncSince(said string, now time.Time, loc *time.Location) (time.Time, error) {
	day, clock, timed := strings.Cut(said, "T")
	since, err := isoDay("since", day, 0, now, loc)
	if err != nil || !timed {
		return since, err
	}
	if since, err = time.Parse(time.RFC3339, said); err != nil {
		return time.Time{}, NotATime("since", clock, "write it like 2026-01-31T09:30:00+11:00")
	}
	return since, nil
}

// topicAndRegion splits "roof restorations for Penrith" into its topic and its (capitalised) place.
func topicAndRegion(text string) (string, string, error) {
	loc := regionRe.FindStringSubmatchIndex(text)
	if loc == nil {
		return "", "", Missing("suburb_or_region", `for which suburb or region? End with it, like "... for Penrith"`)
	}
	region := text[loc[2]:loc[3]]
	if strings.HasPrefix(text[loc[0]:], " in the ") || strings.HasPrefix(text[loc[0]:], " for the ") || strings.HasPrefix(text[loc[0]:], " around the ") {
		region = "the " + region
	}
	return CleanTitle(text[:loc[0]]), region, nil
}

func adsChannel(said string) string {
	switch s := strings.ToLower(strings.Join(strings.Fields(said), " ")); {
	case s == "google ads" || s == "google":
		return "google_ads"
	case s == "meta" || s == "facebook" || s == "instagram":
		return "meta"
	case s == "gmb" || s == "google business":
		return "gmb"
	default:
		return s
	}
}

func assetType(said string) string {
	switch s := strings.ToLower(said); s {
	case "photo", "picture", "image":
		return "photo"
	case "video":
		return "video"
	case "document", "doc":
		return "document"
	}
	return "other"
}

// highLevelSync is the input of a HighLevel sync of a record: its id and the HighLevel contact, which is
// asked for when missing.
func highLevelSync(m *Match, idField string) (map[string]any, error) {
	contact := m.Group("contact")
	if contact == "" {
		return nil, Missing("highlevel_contact_id", `which HighLevel contact? End with "to highlevel contact <contact id>"`)
	}
	return withID(m, idField, map[string]any{"highlevel_contact_id": contact}), nil
}
