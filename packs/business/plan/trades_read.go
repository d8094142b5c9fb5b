package businessplan

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	businesspack "github.com/gemhq/gem/packs/business"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/planner"
)

// How the trades rules read what a message says: leads, sends, measurements, defects, money, line items and
// warranty terms.

// channelPattern matches the channel a quote, an invoice or a review request is sent by.
const channelPattern = `email\s+and\s+(?:sms|text)|(?:sms|text)\s+and\s+email|both|e-?mail|sms|text(?:\s+message)?`

// channelOf is a send's channel (email, sms or both): the one named, else the verb's ("text the quote");
// asked for when neither says.
func channelOf(m *planner.Match) (string, error) {
	c := strings.ToLower(m.Group("channel"))
	switch {
	case c == "both" || strings.Contains(c, " and "):
		return businesspack.ChannelBoth, nil
	case strings.Contains(c, "mail"):
		return businesspack.ChannelEmail, nil
	case c != "":
		return businesspack.ChannelSMS, nil
	}
	switch strings.ToLower(m.Group("verb")) {
	case "email":
		return businesspack.ChannelEmail, nil
	case "text", "sms":
		return businesspack.ChannelSMS, nil
	}
	return "", planner.Missing("channel", `by email, SMS or both? For example "send the quote by email"`)
}

var (
	numberUnitRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(m2|m²|sqm|square\s+met(?:re|er)s?|ft2|sq\s*ft|square\s+feet|degrees?|deg|°|millimet(?:re|er)s?|mm|met(?:re|er)s?|lm|m|feet|ft|downpipes?)?`)
	priceRe      = regexp.MustCompile(`\$\s?(\d[\d,]*(?:\.\d{1,2})?)|(\d[\d,]*(?:\.\d{1,2})?)\s*(?:dollars|aud)\b`)
	quantityRe   = regexp.MustCompile(`(?i)^\s*(\d+(?:\.\d{1,3})?)\s*(?:x|×|\*)?\s+|\s(\d+(?:\.\d{1,3})?)\s*(x|×|units?|pcs|pieces|sheets|lengths|hours?|hrs?|m2|lm|metres|meters)\b`)
)

// measurementKinds name what people measure on a roof, with the label recorded and the usual unit.
var measurementKinds = []struct {
	label string
	words []string
	unit  string
}{
	{"roof pitch", []string{"pitch", "slope", "angle"}, "deg"},
	{"roof area", []string{"roof area", "area", "roof"}, "m2"},
	{"gutter length", []string{"gutter", "gutters", "guttering"}, "m"},
	{"ridge length", []string{"ridge", "ridges", "ridge capping"}, "m"},
	{"valley length", []string{"valley", "valleys"}, "m"},
	{"fascia length", []string{"fascia", "fascias"}, "m"},
	{"downpipes", []string{"downpipe", "downpipes"}, "count"},
}

// parseMeasurement reads "roof area 180 m2" or "pitch 22 degrees": what was measured, how much and in
// which unit (the kind's usual one when the message names none), and any words after it as notes.
func parseMeasurement(m *planner.Match) (businesspack.InspectionAddMeasurementInput, error) {
	var in businesspack.InspectionAddMeasurementInput
	what := m.Group("what")
	loc := numberUnitRe.FindStringSubmatchIndex(what)
	if loc == nil {
		return in, planner.Missing("value", `what was measured, and how much? For example "roof area 180 m2" or "pitch 22 degrees"`)
	}
	num := numberUnitRe.FindStringSubmatch(what)
	value, _ := strconv.ParseFloat(num[1], 64)
	label, unit := "", ""
	for _, k := range measurementKinds {
		if planner.HasWord(what, k.words...) {
			label, unit = k.label, k.unit
			break
		}
	}
	if label == "" {
		label = planner.CleanTitle(what[:loc[0]])
	}
	switch u := strings.ToLower(num[2]); {
	case u == "m2" || u == "m²" || u == "sqm" || strings.HasPrefix(u, "square m"):
		unit = "m2"
	case u == "ft2" || strings.HasPrefix(u, "sq") || strings.HasPrefix(u, "square f"):
		unit = "ft2"
	case strings.HasPrefix(u, "deg") || u == "°":
		unit = "deg"
	case u == "mm" || strings.HasPrefix(u, "milli"):
		unit = "mm"
	case u == "m" || u == "lm" || strings.HasPrefix(u, "met"):
		unit = "m"
	case u == "ft" || u == "feet":
		unit = "ft"
	case strings.HasPrefix(u, "downpipe"):
		unit = "count"
	}
	switch {
	case label == "":
		return in, planner.Missing("label", fmt.Sprintf(`what measures %s? For example "roof area 180 m2"`, num[1]))
	case unit == "":
		return in, planner.Missing("unit", fmt.Sprintf("in which unit is %s? Say m2, m, mm, ft, degrees or a count", num[1]))
	}
	in.InspectionID, in.Label, in.Value, in.Unit = m.ID(), label, value, unit
	in.Notes = planner.CleanTitle(what[loc[1]:])
	return in, nil
}

// defectCategories map words to GEM's defect categories; the first that matches wins, else other.
var defectCategories = []struct {
	category string
	words    []string
}{
	{businesspack.DefectLeak, []string{"leak", "leaks", "leaking", "water damage", "water stain", "water stains", "damp"}},
	{businesspack.DefectRidge, []string{"ridge", "ridges", "ridge capping", "ridge caps", "pointing", "bedding"}},
	{businesspack.DefectValley, []string{"valley", "valleys", "valley iron"}},
	{businesspack.DefectFlashing, []string{"flashing", "flashings", "apron", "counter flashing"}},
	{businesspack.DefectGutter, []string{"gutter", "gutters", "guttering", "downpipe", "downpipes", "box gutter"}},
	{businesspack.DefectTile, []string{"tile", "tiles", "tiled", "sheet", "sheets", "shingle", "shingles", "slate"}},
}

func defectCategory(allowed []string, text string) string {
	for _, c := range defectCategories {
		if planner.HasWord(text, c.words...) && (len(allowed) == 0 || slices.Contains(allowed, c.category)) {
			return c.category
		}
	}
	return businesspack.DefectOther
}

// severityAfterRe matches a severity said after a defect's description: "…, high severity", "… severity: low".
var severityAfterRe = regexp.MustCompile(`(?i)[,;]?\s*\b(?:(low|minor|medium|moderate|high|major|critical|severe)\s+(?:severity|priority)|severity\s*[:=]?\s*(low|minor|medium|moderate|high|major|critical|severe))\b[.!]*\s*$`)

// severityAfter is the severity said at the end of a defect's description ("" when none) and the
// description without it.
func severityAfter(text string) (severity, rest string) {
	sm := severityAfterRe.FindStringSubmatchIndex(text)
	if sm == nil {
		return "", text
	}
	for g := 1; g <= 2; g++ {
		if sm[2*g] >= 0 {
			severity = text[sm[2*g]:sm[2*g+1]]
		}
	}
	return severity, text[:sm[0]]
}

// lostReasonCodes are the words that say why a lead was lost, by the reason code they mean, most telling
// first: "went with someone cheaper" is price before competitor.
var lostReasonCodes = []struct {
	code  string
	words *regexp.Regexp
}{
	{"price", regexp.MustCompile(`(?i)\b(?:cheaper|price[ds]?|pricing|expensive|too\s+much|cost(?:s|ly)?|budget|afford)\b`)},
	{"competitor", regexp.MustCompile(`(?i)\b(?:competitors?|someone\s+else|somebody\s+else|another\s+(?:company|roofer|builder|trade(?:ie|sman)?|mob|crew)|went\s+with|chose|hired|signed\s+with)\b`)},
	{"no_response", regexp.MustCompile(`(?i)\b(?:no\s+(?:response|reply|answer)|ghosted|never\s+(?:replied|responded|answered|heard\s+back|got\s+back|called\s+back)|stopped\s+(?:replying|responding|answering)|unresponsive|can'?t\s+reach|couldn'?t\s+reach)\b`)},
	{"timing", regexp.MustCompile(`(?i)\b(?:timing|not\s+ready|next\s+year|later\s+(?:on|in\s+the\s+year)|on\s+hold|put\s+(?:it\s+)?off|postponed|too\s+long|couldn'?t\s+wait|can'?t\s+wait)\b`)},
	{"not_a_fit", regexp.MustCompile(`(?i)\b(?:not\s+a\s+(?:good\s+)?fit|out\s+of\s+(?:our\s+)?(?:area|range)|too\s+small|don'?t\s+do|not\s+our\s+kind)\b`)},
}

// lostReasonCode is the reason code the words of a lead's lost reason mean, where the tool allows it; ""
// (left out: the tool's other) when they mean none.
func lostReasonCode(allowed []string, reason string) string {
	for _, c := range lostReasonCodes {
		if c.words.MatchString(reason) && (len(allowed) == 0 || slices.Contains(allowed, c.code)) {
			return c.code
		}
	}
	return ""
}

// severityOf maps what people say to a severity the tool's enum has: minor is low, critical is high where
// there is no critical.
func severityOf(allowed []string, said string) string {
	said = strings.ToLower(said)
	if said == "" {
		return ""
	}
	if slices.Contains(allowed, said) {
		return said
	}
	switch said {
	case "minor":
		said = businesspack.SeverityLow
	case "moderate":
		said = businesspack.SeverityMedium
	case "major", "critical", "severe":
		said = businesspack.SeverityHigh
	}
	if len(allowed) == 0 || slices.Contains(allowed, said) {
		return said
	}
	return ""
}

func parseCents(s string) (int64, error) {
	s = strings.NewReplacer("$", "", ",", "", " ", "").Replace(s)
	dollars, cents, _ := strings.Cut(s, ".")
	d, err := strconv.ParseInt(dollars, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an amount of money", s)
	}
	c := int64(0)
	if cents != "" {
		if len(cents) == 1 {
			cents += "0"
		}
		c, _ = strconv.ParseInt(cents, 10, 64)
	}
	return d*100 + c, nil
}

var paymentMethods = []struct {
	method string
	words  []string
}{
	{businesspack.PaymentCard, []string{"card", "credit card", "debit card", "eftpos", "visa", "mastercard", "amex"}},
	{businesspack.PaymentBankTransfer, []string{"bank transfer", "transfer", "eft", "bank", "direct deposit", "deposit"}},
	{businesspack.PaymentCash, []string{"cash"}},
}

// paymentMethod maps what people say to a method the tool's enum has; anything else named (a cheque) is
// other.
func paymentMethod(allowed []string, s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	for _, m := range paymentMethods {
		if planner.HasWord(s, m.words...) && (len(allowed) == 0 || slices.Contains(allowed, m.method)) {
			return m.method
		}
	}
	if slices.Contains(allowed, businesspack.PaymentOther) {
		return businesspack.PaymentOther
	}
	return ""
}

// parseLineItem reads "12 x colorbond sheets at $85.50" or "labour, 16 hours at $95" or "skip bin $450".
// negativeRe finds a minus sign on a leading quantity ("-12 x") or on a price ("-$5", "$-5"); a dash
// between words ("gutter guard - $400") is a separator, not a sign.
var negativeRe = regexp.MustCompile(`^\s*[-−]\s*\d|(?:^|\s)[-−]\$\d|\$[-−]\d`)

func parseLineItem(what string) (businesspack.LineItem, error) {
	// "-12 x sheets" would otherwise lose its sign as a bullet and become 12 sheets.
	if negativeRe.MatchString(what) {
		return businesspack.LineItem{}, fmt.Errorf("%q: a line item's quantity and price cannot be negative", strings.TrimSpace(what))
	}
	price := priceRe.FindStringSubmatchIndex(what)
	if price == nil {
		return businesspack.LineItem{}, planner.Missing("unit_price_cents", "what does the item cost? Give a price like $85.50")
	}
	raw := what[price[0]:price[1]]
	cents, err := parseCents(strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(raw), "dollars"), "aud"))
	if err != nil {
		return businesspack.LineItem{}, err
	}
	rest := what[:price[0]] + " " + what[price[1]:]
	quantity, unit := 1.0, ""
	if q := quantityRe.FindStringSubmatchIndex(rest); q != nil {
		if q[2] >= 0 {
			quantity, _ = strconv.ParseFloat(rest[q[2]:q[3]], 64)
		} else {
			quantity, _ = strconv.ParseFloat(rest[q[4]:q[5]], 64)
			if u := strings.ToLower(rest[q[6]:q[7]]); u != "x" && u != "×" {
				unit = map[string]string{"hrs": "hours", "hr": "hour", "meters": "metres"}[u]
				if unit == "" {
					unit = u
				}
			}
		}
		rest = rest[:q[0]] + " " + rest[q[1]:]
	}
	desc := trailingPriceWordRe.ReplaceAllString(strings.TrimSpace(rest), "")
	desc = planner.CleanTitle(innerPriceWordRe.ReplaceAllString(desc, " "))
	if desc == "" {
		return businesspack.LineItem{}, planner.Missing("description", `what is the item? For example "12 x colorbond sheets at $85.50"`)
	}
	return businesspack.LineItem{Description: desc, Quantity: quantity, Unit: unit, UnitPriceCents: cents}, nil
}

var (
	trailingPriceWordRe = regexp.MustCompile(`(?i)\b(at|@|each|per\s+\w+|for)\s*$`)
	innerPriceWordRe    = regexp.MustCompile(`(?i)\s+(at|@|each)\s*($|,)`)
	termRe              = regexp.MustCompile(`(?i)(\d+)[\s-]*(years?|yrs?|months?)`)
	lineItemSepRe       = regexp.MustCompile(`(?i)\s+(?:and|\+|&)\s+`)
)

// warrantyTerm writes a term as people read it: "10-year" → "10 years".
func warrantyTerm(s string) string {
	m := termRe.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	n, _ := strconv.Atoi(m[1])
	unit := "year"
	if strings.HasPrefix(strings.ToLower(m[2]), "m") {
		unit = "month"
	}
	return fmt.Sprintf("%d %s", n, brain.Plural(n, unit, unit+"s"))
}

var (
	leadEmailRe = regexp.MustCompile(planner.EmailPattern)
	suburbRe    = regexp.MustCompile(`(?i)\b(?:in|at|from|suburb:?)\s+([a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2})`)
	namedRe     = regexp.MustCompile(`(?i)\b(?:named|called|name:?)\s+([A-Za-z][\w'-]*(?:\s+[A-Z][\w'-]*){0,3})`)
)

// sourceSynonyms map the words people use to GEM's lead sources; only values the tool's enum has are used.
// "other" sources keep the words in the lead's notes. Google Ads comes before the business profile, as
// "google" alone means the listing.
var sourceSynonyms = []struct {
	source string
	words  []string
}{
	{businesspack.SourceGoogleAds, []string{"google ads", "google ad", "adwords", "ppc", "paid search"}},
	{businesspack.SourceGMB, []string{"gmb", "google my business", "google business profile", "google business", "google maps", "google"}},
	{businesspack.SourceMeta, []string{"facebook", "fb", "instagram", "insta", "meta", "social media"}},
	{businesspack.SourceReferral, []string{"referral", "referrals", "referred", "word of mouth", "recommendation", "recommended"}},
	{businesspack.SourceRepeat, []string{"repeat customer", "repeat", "returning customer", "existing customer", "past customer", "previous customer"}},
	{businesspack.SourceOther, []string{"website", "web site", "web form", "online form", "walk in", "walk-in", "walked in", "phone call", "called in", "rang", "phoned", "cold call", "flyer", "letterbox"}},
}

// leadSource finds a lead source in text: the enum value and the words that said it.
func leadSource(allowed []string, text string) (string, string) {
	for _, s := range sourceSynonyms {
		if len(allowed) > 0 && !slices.Contains(allowed, s.source) {
			continue
		}
		for _, w := range s.words {
			if planner.HasWord(text, w) {
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
func parseLead(m *planner.Match) (businesspack.LeadsCreateInput, error) {
	rest := m.Group("rest")
	var in businesspack.LeadsCreateInput

	phoneLoc, number, err := m.PhoneIn(rest, "phone")
	if err != nil {
		return in, err
	}
	if phoneLoc == nil {
		return in, planner.Missing("phone", `what is the lead's phone number? For example "new lead Ann Lee 0412 345 678 in Newtown"`)
	}
	in.Phone = number.Typed
	before := rest[:phoneLoc[0]]
	rest = rest[:phoneLoc[0]] + " , " + rest[phoneLoc[1]:]

	if e := leadEmailRe.FindString(rest); e != "" {
		in.Email = e
		rest = strings.Replace(rest, e, " ", 1)
		before = strings.Replace(before, e, " ", 1)
	}

	if src, words := leadSource(m.EnumValues("source"), rest); src != "" {
		in.Source = src
		if src == businesspack.SourceOther && m.Tool.HasInputProperty("notes") {
			in.Notes = "Source: " + words
		}
		rest = sourceStripRe.ReplaceAllString(rest, " ")
		before = sourceStripRe.ReplaceAllString(before, " ")
	}

	if loc := suburbRe.FindStringSubmatchIndex(rest); loc != nil {
		if suburb := suburbWords(rest[loc[2]:loc[3]]); suburb != "" {
			in.Suburb = suburb
			if i := strings.Index(before, rest[loc[0]:loc[1]]); i >= 0 {
				before = before[:i]
			}
		}
	}

	if nm := namedRe.FindStringSubmatch(rest); nm != nil {
		in.Name = strings.TrimSpace(nm[1])
	} else {
		// The name is what comes before the phone number, up to a comma: "Ann Lee, 0412 ...".
		words := strings.Fields(strings.Split(before, ",")[0])
		name := strings.Trim(strings.Join(words[:min(len(words), 4)], " "), " ,.:-")
		if name == "" {
			return in, planner.Missing("name", `what is the lead's name? For example "new lead Ann Lee 0412 345 678 in Newtown"`)
		}
		in.Name = name
	}
	if in.Suburb == "" {
		// "Ann Lee, 0412 345 678, Newtown": a capitalised part after the name and phone.
		for _, part := range strings.Split(rest, ",")[1:] {
			part = strings.Trim(part, " .")
			if part != "" && unicode.IsUpper([]rune(part)[0]) && len(strings.Fields(part)) <= 3 && !strings.ContainsAny(part, "0123456789@") {
				in.Suburb = part
				break
			}
		}
	}
	if in.Suburb == "" {
		return in, planner.Missing("suburb", fmt.Sprintf(`which suburb is %s in? Say it like "new lead %s %s in Newtown"`, in.Name, in.Name, in.Phone))
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
		return planner.Capitalize(fields[0])
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
