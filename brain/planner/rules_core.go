package planner

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// coreRules plan GEM's everyday office work: health, tasks, notes and leads. Among them are every phrasing
// GEM's own rules planner understood ("system status", "create task: ...", "todo ...", "new lead: ...",
// "lead from ...", "notes about ...", "list leads in contacted", ...).
var coreRules = []Rule{
	{
		Name: "add_memory", Tool: "identity.add_memory",
		Help:     "remember a preference or a fact about you",
		Examples: []string{"remember that I prefer inspections in the morning", "remember fact: the ute is due for a service in March"},
		Patterns: []string{
			`^(?:please\s+)?remember\s+(?:my\s+|this\s+|a\s+)?(?P<type>preference|fact|boundary|commitment|pattern)\s*[:\-]\s*(?P<text>.+)$`,
			`^(?:please\s+)?remember\s+(?:that\s+)?(?P<text>i\s+(?:prefer|like|love|hate|dislike|don't\s+like|do\s+not\s+like|always|never)\b.+)$`,
		},
		Build: func(m *Match) (any, error) {
			text := CleanTitle(m.Group("text"))
			kind := strings.ToLower(m.Group("type"))
			if kind == "" {
				kind = "preference"
			}
			if !slices.Contains(enumOf(m.Tool, "memory_type"), kind) {
				return nil, ErrNoMatch
			}
			return map[string]any{"memory_type": kind, "key": Cut(Slug(text), 120), "value": map[string]any{"text": text}, "source": "user"}, nil
		},
	},
	{
		Name: "update_lead_stage", Tool: "leads.update_stage",
		Help:     "move a lead along the pipeline (new, contacted, inspection scheduled, quoted, won, lost)",
		Examples: []string{"move the lead to contacted", "move lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to quoted"},
		Patterns: []string{
			`^(?:please\s+)?(?:move|set|change|mark|update)\s+(?:the\s+)?lead(?:\s+(?P<id>` + UUIDPattern + `))?(?:'s\s+stage|\s+stage)?\s+(?:to|as|into)\s+(?:stage\s+)?(?P<stage>[\w\s-]+?)\s*[.!]*$`,
		},
		Build: func(m *Match) (any, error) {
			stage, err := EnumValue(enumOf(m.Tool, "stage"), "stage", m.Group("stage"))
			if err != nil {
				return nil, err
			}
			return withID(m, "lead_id", map[string]any{"stage": stage}), nil
		},
	},
	{
		Name: "list_leads", Tool: "leads.list_by_stage",
		Help:     "list leads, optionally in one stage, suburb or source",
		Examples: []string{"list leads", "list new leads", "show leads in contacted", "leads in Newtown"},
		Patterns: []string{
			`^(?:please\s+)?(?:list|show|get|give\s+me|what\s+are|which\s+are)\b(?P<filters>.*?)\bleads\b(?P<more>.*)$`,
			`^(?P<filters>(?:\w+\s+)?)leads\b(?P<more>.*)$`,
			`^(?:please\s+)?(?:list|show)\s+lead\s+(?:in\s+)?(?P<filters>new|contacted|quoted|won|lost|inspection[\s_]scheduled)(?:\s+stage)?\s*[.!?]*$`,
		},
		Build: func(m *Match) (any, error) {
			words := m.Group("filters") + " " + m.Group("more")
			in := map[string]any{}
			for _, stage := range leadStages {
				if HasWord(words, stage, strings.ReplaceAll(stage, "_", " ")) {
					in["stage"] = stage
					break
				}
			}
			if src, _ := leadSource(enumOf(m.Tool, "source"), words); src != "" {
				in["source"] = src
			}
			if place := PlaceIn(words); place != "" && in["stage"] != Normalize(place) {
				in["suburb"] = place
			}
			return in, nil
		},
	},
	{
		Name: "create_lead", Tool: "leads.create",
		Help:     "record a new lead with name, phone and suburb (and email and source: referral, gmb, google ads, meta, repeat)",
		Examples: []string{"new lead Ann Lee 0412 345 678 in Newtown, referral", "lead from John Smith 0400 123 456 in Penrith", "add lead: Jane Doe, 0400 111 222, Marrickville, facebook"},
		Patterns: []string{
			`^(?:please\s+)?(?:new|add|create|record|log)\s+(?:an?\s+)?(?:new\s+)?lead\b\s*(?:for\b|:|-|,)?\s*(?P<rest>.+)$`,
			`^lead\s*[:\-]\s*(?P<rest>.+)$`,
			`^(?:new\s+)?lead\s+from\s+(?P<rest>.+)$`,
		},
		Build: func(m *Match) (any, error) { return parseLead(m) },
	},
}

// leadStages are the pipeline's stages, GEM's.
var leadStages = []string{"new", "contacted", "inspection_scheduled", "quoted", "won", "lost"}

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

// Slug makes a key from text: "I prefer mornings" → i-prefer-mornings.
func Slug(text string) string {
	return strings.Trim(slugRe.ReplaceAllString(strings.ToLower(text), "-"), "-")
}

var (
	emailRe  = regexp.MustCompile(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`)
	suburbRe = regexp.MustCompile(`(?i)\b(?:in|at|from|suburb:?)\s+([a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2})`)
	namedRe  = regexp.MustCompile(`(?i)\b(?:named|called|name:?)\s+([A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*){0,3})`)
)

// sourceSynonyms map the words people use to GEM's lead sources; only values the tool's enum has are used.
// "other" sources keep the words in the lead's notes. Google Ads comes before the business profile, as
// "google" alone means the listing.
var sourceSynonyms = []struct {
	source string
	words  []string
}{
	{"google_ads", []string{"google ads", "google ad", "adwords", "ppc", "paid search"}},
	{"gmb", []string{"gmb", "google my business", "google business profile", "google business", "google maps", "google"}},
	{"meta", []string{"facebook", "fb", "instagram", "insta", "meta", "social media"}},
	{"referral", []string{"referral", "referrals", "referred", "word of mouth", "recommendation", "recommended"}},
	{"repeat", []string{"repeat customer", "repeat", "returning customer", "existing customer", "past customer", "previous customer"}},
	{"other", []string{"website", "web site", "web form", "online form", "walk in", "walk-in", "walked in", "phone call", "called in", "rang", "phoned", "cold call", "flyer", "letterbox"}},
}

// leadSource finds a lead source in text: the enum value and the words that said it.
func leadSource(allowed []string, text string) (string, string) {
	for _, s := range sourceSynonyms {
		if len(allowed) > 0 && !slices.Contains(allowed, s.source) {
			continue
		}
		for _, w := range s.words {
			if HasWord(text, w) {
				return s.source, w
			}
		}
	}
	return "", ""
}

// sourceStripRe matches source phrases ("from a referral", "via facebook", "found us on google") so they are
// not read as a name or a suburb.
var sourceStripRe = func() *regexp.Regexp {
	var alts []string
	for _, s := range sourceSynonyms {
		for _, w := range s.words {
			alts = append(alts, regexp.QuoteMeta(w))
		}
	}
	return regexp.MustCompile(`(?i)(?:\b(?:found\s+us\s+)?(?:from|via|through|on|source:?)\s+)?(?:an?\s+|the\s+|our\s+)?\b(?:` + strings.Join(alts, "|") + `)\b`)
}()

// suburbStop are words a suburb does not go on into.
var suburbStop = map[string]bool{"via": true, "from": true, "on": true, "and": true, "with": true, "source": true, "found": true,
	"email": true, "phone": true, "ref": true, "referral": true, "the": true, "a": true}

// parseLead reads a lead's name, phone, email, suburb and source from free text. Name, phone and suburb
// are required (GEM's contract): what is missing is asked for, never made up.
func parseLead(m *Match) (map[string]any, error) {
	rest := m.Group("rest")
	in := map[string]any{}

	phoneLoc, number, err := phoneIn(rest, "phone", m.PhoneRegion)
	if err != nil {
		return nil, err
	}
	if phoneLoc == nil {
		return nil, Missing("phone", `what is the lead's phone number? For example "new lead Ann Lee 0412 345 678 in Newtown"`)
	}
	in["phone"] = number.Typed
	before := rest[:phoneLoc[0]]
	rest = rest[:phoneLoc[0]] + " , " + rest[phoneLoc[1]:]

	if e := emailRe.FindString(rest); e != "" {
		in["email"] = e
		rest = strings.Replace(rest, e, " ", 1)
		before = strings.Replace(before, e, " ", 1)
	}

	if src, words := leadSource(enumOf(m.Tool, "source"), rest); src != "" {
		in["source"] = src
		if src == "other" && m.Tool.HasInputProperty("notes") {
			in["notes"] = "Source: " + words
		}
		rest = sourceStripRe.ReplaceAllString(rest, " ")
		before = sourceStripRe.ReplaceAllString(before, " ")
	}

	if loc := suburbRe.FindStringSubmatchIndex(rest); loc != nil {
		if suburb := suburbWords(rest[loc[2]:loc[3]]); suburb != "" {
			in["suburb"] = suburb
			if i := strings.Index(before, rest[loc[0]:loc[1]]); i >= 0 {
				before = before[:i]
			}
		}
	}

	if nm := namedRe.FindStringSubmatch(rest); nm != nil {
		in["name"] = strings.TrimSpace(nm[1])
	} else {
		// The name is what comes before the phone number, up to a comma: "Ann Lee, 0412 ...".
		words := strings.Fields(strings.Split(before, ",")[0])
		name := strings.Trim(strings.Join(words[:min(len(words), 4)], " "), " ,.:-")
		if name == "" {
			return nil, Missing("name", `what is the lead's name? For example "new lead Ann Lee 0412 345 678 in Newtown"`)
		}
		in["name"] = name
	}
	if _, ok := in["suburb"]; !ok {
		// "Ann Lee, 0412 345 678, Newtown": a capitalised part after the name and phone.
		for _, part := range strings.Split(rest, ",")[1:] {
			part = strings.Trim(part, " .")
			if part != "" && unicode.IsUpper([]rune(part)[0]) && len(strings.Fields(part)) <= 3 && !strings.ContainsAny(part, "0123456789@") {
				in["suburb"] = part
				break
			}
		}
	}
	if _, ok := in["suburb"]; !ok {
		return nil, Missing("suburb", fmt.Sprintf(`which suburb is %s in? Say it like "new lead %s %s in Newtown"`, in["name"], in["name"], in["phone"]))
	}
	return in, nil
}

// suburbWords keeps the words of a suburb: capitalised ones, up to three ("Surry Hills"), or a single
// lower-case word ("newtown" → Newtown); it stops at words that start something else ("via", "from").
func suburbWords(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 || suburbStop[strings.ToLower(fields[0])] {
		return ""
	}
	if !unicode.IsUpper([]rune(fields[0])[0]) {
		return Capitalize(fields[0])
	}
	var out []string
	for _, f := range fields {
		if !unicode.IsUpper([]rune(f)[0]) || suburbStop[strings.ToLower(f)] {
			break
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}
