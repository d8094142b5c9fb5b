package businesshandlers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/llmtext"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerMarketing(h executor.Handlers, p *pack) {
	h.Add(businesspack.GenerateMetaAdPack, llmHandler(p.generateMetaAdPack))
	h.Add(businesspack.GenerateGoogleAdsPack, llmHandler(p.generateGoogleAdsPack))
	h.Add(businesspack.GenerateCaseStudyFromJob, llmHandler(p.generateCaseStudy))
	h.Add(businesspack.GenerateGMBPost, llmHandler(p.generateGMBPost))
	h.Func(businesspack.ScheduleContent, executor.Typed(p.scheduleContent))
	h.Func(businesspack.LogCampaignResult, executor.Typed(logCampaignResult))
}

// maxAssetRefs bounds the photos one piece of copy is written from.
const maxAssetRefs = 10

// resolveAssetRefs finds the media assets that refs name (an asset id or a file_ref each), with their
// facts; a ref naming no asset is not_found. Blank and repeated refs are dropped.
func resolveAssetRefs(ctx context.Context, db executor.DB, field string, refs []string) ([]string, []assetFacts, error) {
	var kept []string
	for _, r := range refs {
		if r = strings.TrimSpace(r); r != "" && !slices.Contains(kept, r) {
			kept = append(kept, r)
		}
	}
	if len(kept) > maxAssetRefs {
		return nil, nil, executor.Invalid("%s names %d assets; at most %d are used", field, len(kept), maxAssetRefs)
	}
	out := []assetFacts{}
	for _, r := range kept {
		// A ref that reads as a UUID may still be a file_ref; the asset with that id wins.
		var asID *uuid.UUID
		if parsed, err := uuid.Parse(r); err == nil {
			asID = &parsed
		}
		var id uuid.UUID
		err := db.QueryRow(ctx, `SELECT id FROM media_assets WHERE id = $1 OR file_ref = $2 ORDER BY id = $1 DESC NULLS LAST LIMIT 1`,
			asID, r).Scan(&id)
		if err != nil {
			return nil, nil, executor.NotFoundIfNoRows(err, field+": media asset", r)
		}
		f, err := loadAssetFacts(ctx, db, id)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, f)
	}
	return kept, out, nil
}

// loadAreaProof counts completed jobs whose site (or lead) suburb is named in area, and those whose quote
// has a line mentioning service.
func loadAreaProof(ctx context.Context, db executor.DB, area string, service *string) (businesspack.AreaProof, error) {
	proof := businesspack.AreaProof{Area: area, ExampleLineItems: []string{}, ServiceSearchedFor: service}
	pattern := "%"
	if service != nil {
		pattern = executor.LikeContains(*service)
	}
	const inArea = `WITH area_jobs AS (
		SELECT j.id, j.quote_id FROM jobs j
		LEFT JOIN quotes q ON q.id = j.quote_id
		LEFT JOIN inspections i ON i.id = q.inspection_id
		LEFT JOIN entities si ON si.id = i.site_id
		LEFT JOIN leads l ON l.id = q.lead_id
		WHERE j.status = 'completed'
		  AND strpos(lower($1), lower(coalesce(nullif(trim(si.suburb), ''), nullif(trim(l.suburb), '')))) > 0)`
	err := db.QueryRow(ctx, inArea+`
		SELECT count(*),
			count(*) FILTER (WHERE EXISTS (SELECT 1 FROM quote_line_items li WHERE li.quote_id = a.quote_id AND li.description ILIKE $2)),
			(SELECT count(*) FROM jobs WHERE status = 'completed')
		FROM area_jobs a`, area, pattern).Scan(&proof.CompletedJobs, &proof.CompletedWithWork, &proof.CompletedAnywhere)
	if err != nil {
		return businesspack.AreaProof{}, err
	}
	proof.ExampleLineItems, err = queryTexts(ctx, db, inArea+`
		SELECT description FROM (SELECT DISTINCT ON (lower(li.description)) li.description, li.created_at
			FROM area_jobs a JOIN quote_line_items li ON li.quote_id = a.quote_id WHERE li.description ILIKE $2
			ORDER BY lower(li.description), li.created_at DESC) d ORDER BY created_at DESC LIMIT 5`, area, pattern)
	return proof, err
}

// addProofTo writes the proof of work in an area.
func addProofTo(fs *promptFacts, a businesspack.AreaProof) {
	fs.add("completed jobs in "+a.Area, a.CompletedJobs)
	if a.ServiceSearchedFor != nil {
		fs.add("of those, with "+*a.ServiceSearchedFor+" in the scope", a.CompletedWithWork)
	}
	fs.add("completed jobs in all areas", a.CompletedAnywhere)
	fs.add("examples of that work (quote lines)", strings.Join(a.ExampleLineItems, "; "))
}

// localCopy is what copy for people in an area is written from: the photos given (refs[i] names
// assets[i]), the business's completed work there, and the model.
type localCopy struct {
	refs   []string
	assets []assetFacts
	proof  businesspack.AreaProof
	loc    *time.Location
	m      llmtext.Model
}

// prepareLocalCopy resolves the photos that refsField names, loads the proof of work in the area, then gets
// the time zone and the model (so a bad ref is reported before a missing configuration).
func (p *pack) prepareLocalCopy(ctx context.Context, c *executor.Call, refsField string, refs []string, area string, service *string) (localCopy, error) {
	var lc localCopy
	var err error
	if lc.refs, lc.assets, err = resolveAssetRefs(ctx, c.DB, refsField, refs); err != nil {
		return lc, err
	}
	if lc.proof, err = loadAreaProof(ctx, c.DB, area, service); err != nil {
		return lc, err
	}
	lc.loc, lc.m, err = p.zoneAndModel(c.Tool.Name)
	return lc, err
}

// addTo writes the proof of work, then the facts of each photo under its ref.
func (lc localCopy) addTo(fs *promptFacts) {
	addProofTo(fs, lc.proof)
	for i, a := range lc.assets {
		fs.section(fmt.Sprintf("Photo %q", lc.refs[i]))
		a.addTo(fs, lc.loc)
		fs.add("alt text", a.AltText)
	}
}

// requiredText trims a required text input; a blank one is a validation_error naming the field.
func requiredText(field, s string) (string, error) {
	if isBlankText(s) {
		return "", executor.Invalid("%s is empty", field)
	}
	return foldSpace(s), nil
}

// Meta ad limits: Meta shows about 125 characters of primary text before "See more"; headlines and link
// descriptions are cut in most placements beyond these.
const (
	metaPrimaryTextMax = 300
	metaHeadlineMax    = 40
	metaDescriptionMax = 30
	metaAdVariants     = 3
)

// metaCallsToAction are the Meta Marketing API call-to-action types the copy may use.
var metaCallsToAction = []string{"LEARN_MORE", "GET_QUOTE", "CALL_NOW", "CONTACT_US", "SEND_MESSAGE"}

var metaAdSchema = &llmtext.Schema{Name: "meta_ad_pack", Doc: map[string]any{
	"type": "object",
	"properties": map[string]any{"ads": map[string]any{"type": "array", "items": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"primary_text":   map[string]any{"type": "string"},
			"headline":       map[string]any{"type": "string"},
			"description":    map[string]any{"type": "string"},
			"call_to_action": map[string]any{"type": "string", "enum": metaCallsToAction},
			"asset_ref":      map[string]any{"type": "string"},
		},
		"required":             []string{"primary_text", "headline", "description", "call_to_action", "asset_ref"},
		"additionalProperties": false,
	}}},
	"required":             []string{"ads"},
	"additionalProperties": false,
}}

// generateMetaAdPack drafts Meta (Facebook and Instagram) ads for an offer in an area, from the business's
// completed jobs there and the photos given. Nothing is posted.
func (p *pack) generateMetaAdPack(ctx context.Context, c *executor.Call, in businesspack.MarketingGenerateMetaAdPackInput) (*businesspack.MarketingGenerateMetaAdPackOutput, error) {
	offer, err := requiredText("offer", in.Offer)
	if err != nil {
		return nil, err
	}
	area, err := requiredText("suburb_or_region", in.SuburbOrRegion)
	if err != nil {
		return nil, err
	}
	service := trimmedText(&in.Service)
	lc, err := p.prepareLocalCopy(ctx, c, "assets_refs", in.AssetsRefs, area, service)
	if err != nil {
		return nil, err
	}
	var fs promptFacts
	fs.add("offer", offer)
	fs.add("service", service)
	fs.add("area", area)
	lc.addTo(&fs)
	task := fmt.Sprintf(`Task: draft %d variants of a Meta (Facebook and Instagram) ad for the offer, aimed at home owners in the area.
Each variant takes a different angle (the problem, the proof of past work nearby, the offer). Limits, in
characters: primary_text %d (the first 125 matter most), headline %d, description %d. call_to_action is one
of %s. asset_ref is the quoted name of the photo that suits the variant best, or "" when no photo is given.
Answer with JSON: {"ads": [{"primary_text", "headline", "description", "call_to_action", "asset_ref"}, ...]}.`,
		metaAdVariants, metaPrimaryTextMax, metaHeadlineMax, metaDescriptionMax, strings.Join(metaCallsToAction, ", "))
	var answer struct {
		Ads []struct {
			PrimaryText  string `json:"primary_text"`
			Headline     string `json:"headline"`
			Description  string `json:"description"`
			CallToAction string `json:"call_to_action"`
			AssetRef     string `json:"asset_ref"`
		} `json:"ads"`
	}
	m := lc.m
	if err := writeCopy(ctx, m, task, &fs, metaAdSchema, 1500, &answer); err != nil {
		return nil, err
	}
	out := businesspack.MarketingGenerateMetaAdPackOutput{Ads: []businesspack.MetaAd{}, Offer: offer, SuburbOrRegion: area, Proof: lc.proof, Dropped: []string{}, WrittenBy: writtenBy(m)}
	for i, a := range answer.Ads {
		ad := businesspack.MetaAd{PrimaryText: strings.TrimSpace(a.PrimaryText), Headline: foldSpace(a.Headline), Description: foldSpace(a.Description),
			CallToAction: a.CallToAction}
		var problems []string
		if ad.PrimaryText == "" || ad.Headline == "" {
			problems = append(problems, "primary_text or headline is empty")
		}
		ad.PrimaryText, _ = fitProse(ad.PrimaryText, metaPrimaryTextMax)
		if n := runeLen(ad.Headline); n > metaHeadlineMax {
			problems = append(problems, fmt.Sprintf("headline has %d characters (at most %d)", n, metaHeadlineMax))
		}
		if n := runeLen(ad.Description); n > metaDescriptionMax {
			problems = append(problems, fmt.Sprintf("description has %d characters (at most %d)", n, metaDescriptionMax))
		}
		if len(problems) > 0 {
			out.Dropped = append(out.Dropped, fmt.Sprintf("ad %d: %s", i+1, strings.Join(problems, "; ")))
			continue
		}
		if ref := strings.TrimSpace(a.AssetRef); slices.Contains(lc.refs, ref) {
			ad.AssetRef = &ref
		}
		ad.Variant = len(out.Ads) + 1
		out.Ads = append(out.Ads, ad)
	}
	if len(out.Ads) == 0 {
		problems := out.Dropped
		if len(problems) == 0 {
			problems = []string{"the answer has no ads"}
		}
		return nil, llmtext.Malformed(m, llmtext.Answer{Text: mustJSON(answer)}, problems)
	}
	return &out, nil
}

// Google Ads responsive search ad limits.
const (
	googleHeadlineMax     = 30
	googleHeadlinesMin    = 3
	googleHeadlinesMax    = 15
	googleDescriptionMax  = 90
	googleDescriptionsMin = 2
	googleDescriptionsMax = 4
	googlePathMax         = 15
	googleKeywordsMax     = 20
	googleKeywordMax      = 80
)

var googleMatchTypes = []string{"phrase", "exact", "broad"}

var googleAdsSchema = &llmtext.Schema{Name: "google_ads_pack", Doc: map[string]any{
	"type": "object",
	"properties": map[string]any{
		"headlines":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"descriptions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"keywords": map[string]any{"type": "array", "items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text":       map[string]any{"type": "string"},
				"match_type": map[string]any{"type": "string", "enum": googleMatchTypes},
			},
			"required":             []string{"text", "match_type"},
			"additionalProperties": false,
		}},
		"negative_keywords": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"path1":             map[string]any{"type": "string"},
		"path2":             map[string]any{"type": "string"},
	},
	"required":             []string{"headlines", "descriptions", "keywords", "negative_keywords", "path1", "path2"},
	"additionalProperties": false,
}}

// googleAdsAnswer is what the model writes of a Google Ads pack (googleAdsSchema).
type googleAdsAnswer struct {
	Headlines        []string                     `json:"headlines"`
	Descriptions     []string                     `json:"descriptions"`
	Keywords         []businesspack.GoogleKeyword `json:"keywords"`
	NegativeKeywords []string                     `json:"negative_keywords"`
	Path1            string                       `json:"path1"`
	Path2            string                       `json:"path2"`
}

// generateGoogleAdsPack drafts a Google Ads responsive search ad (headlines, descriptions, display paths)
// and keywords for a service in a region, from the business's completed jobs there. Lines over Google's
// limits are dropped; too few left is a failure. Nothing is posted.
func (p *pack) generateGoogleAdsPack(ctx context.Context, c *executor.Call, in businesspack.MarketingGenerateGoogleAdsPackInput) (*businesspack.MarketingGenerateGoogleAdsPackOutput, error) {
	service, err := requiredText("service", in.Service)
	if err != nil {
		return nil, err
	}
	region, err := requiredText("region", in.Region)
	if err != nil {
		return nil, err
	}
	var finalURL *string
	if lp := trimmedText(&in.LandingPage); lp != nil {
		u, err := url.Parse(*lp)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, executor.Invalid("landing_page %q is not an http(s) URL", *lp)
		}
		finalURL = lp
	}
	proof, err := loadAreaProof(ctx, c.DB, region, &service)
	if err != nil {
		return nil, err
	}
	m, err := p.model(c.Tool.Name)
	if err != nil {
		return nil, err
	}
	var fs promptFacts
	fs.add("service", service)
	fs.add("region", region)
	fs.add("landing page", finalURL)
	addProofTo(&fs, proof)
	task := fmt.Sprintf(`Task: draft a Google Ads responsive search ad and its keywords for the service in the region.
- headlines: %d to %d, each at most %d characters, each able to stand alone; include the region in some.
- descriptions: %d to %d, each at most %d characters.
- keywords: up to %d searches a home owner needing the service would type, with match_type phrase, exact or broad.
- negative_keywords: searches to exclude (jobs, courses, DIY, other trades).
- path1 and path2: display URL paths of at most %d characters each (letters, digits, hyphens), or "".
Answer with JSON: {"headlines", "descriptions", "keywords": [{"text", "match_type"}], "negative_keywords", "path1", "path2"}.`,
		googleHeadlinesMin, googleHeadlinesMax, googleHeadlineMax, googleDescriptionsMin, googleDescriptionsMax, googleDescriptionMax,
		googleKeywordsMax, googlePathMax)
	var answer googleAdsAnswer
	if err := writeCopy(ctx, m, task, &fs, googleAdsSchema, 1500, &answer); err != nil {
		return nil, err
	}
	out := businesspack.MarketingGenerateGoogleAdsPackOutput{Service: service, Region: region, Proof: proof, Dropped: []string{}, WrittenBy: writtenBy(m)}
	out.Pack.Headlines = keepLines("headline", answer.Headlines, googleHeadlineMax, googleHeadlinesMax, &out.Dropped)
	out.Pack.Descriptions = keepLines("description", answer.Descriptions, googleDescriptionMax, googleDescriptionsMax, &out.Dropped)
	if len(out.Pack.Headlines) < googleHeadlinesMin || len(out.Pack.Descriptions) < googleDescriptionsMin {
		problems := append([]string{fmt.Sprintf("%d usable headlines and %d usable descriptions; an ad needs %d and %d",
			len(out.Pack.Headlines), len(out.Pack.Descriptions), googleHeadlinesMin, googleDescriptionsMin)}, out.Dropped...)
		return nil, llmtext.Malformed(m, llmtext.Answer{Text: mustJSON(answer)}, problems)
	}
	out.Pack.Keywords = []businesspack.GoogleKeyword{}
	for _, k := range answer.Keywords {
		text := strings.ToLower(foldSpace(k.Text))
		if text == "" || runeLen(text) > googleKeywordMax || len(out.Pack.Keywords) == googleKeywordsMax ||
			slices.ContainsFunc(out.Pack.Keywords, func(o businesspack.GoogleKeyword) bool { return o.Text == text && o.MatchType == k.MatchType }) {
			continue
		}
		out.Pack.Keywords = append(out.Pack.Keywords, businesspack.GoogleKeyword{Text: text, MatchType: k.MatchType})
	}
	out.Pack.NegativeKeywords = normalizeTags(answer.NegativeKeywords)
	if len(out.Pack.NegativeKeywords) > googleKeywordsMax {
		out.Pack.NegativeKeywords = out.Pack.NegativeKeywords[:googleKeywordsMax]
	}
	out.Pack.Path1, out.Pack.Path2 = displayPath(answer.Path1), displayPath(answer.Path2)
	out.Pack.FinalURL = finalURL
	return &out, nil
}

// keepLines keeps the distinct non-empty lines within max characters, at most limit of them, and notes
// the lines it drops for being too long.
func keepLines(what string, lines []string, max, limit int, dropped *[]string) []string {
	out := []string{}
	for _, l := range lines {
		l = foldSpace(l)
		switch n := runeLen(l); {
		case l == "" || slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, l) }):
		case n > max:
			*dropped = append(*dropped, fmt.Sprintf("%s %q has %d characters (at most %d)", what, l, n, max))
		case len(out) < limit:
			out = append(out, l)
		}
	}
	return out
}

// displayPath makes a Google Ads display path: letters, digits and hyphens, at most googlePathMax.
func displayPath(s string) string {
	p := slugify(s)
	if len(p) > googlePathMax {
		p = strings.TrimRight(p[:googlePathMax], "-")
	}
	return p
}

// Case study lengths per format, in characters.
var caseStudyFormats = map[string]struct {
	maxLength int
	maxTokens int
	guide     string
}{
	"short":           {700, 600, "a short post (for social media or a newsletter): three to five sentences, no headings"},
	"website_section": {2000, 1200, "a section of the business's projects page: two to four short paragraphs, no headings"},
	"blog":            {8000, 4000, "a blog article in Markdown: an opening paragraph, then sections with '## ' headings (the problem, what we found, what we did, the result)"},
}

var caseStudySchema = &llmtext.Schema{Name: "case_study", Doc: map[string]any{
	"type": "object",
	"properties": map[string]any{
		"title": map[string]any{"type": "string"},
		"draft": map[string]any{"type": "string"},
	},
	"required":             []string{"title", "draft"},
	"additionalProperties": false,
}}

// generateCaseStudy drafts a case study of a completed job from its records: the quote's scope, what the
// inspection found, the job's notes and progress, and its photos. A job not completed yet is a conflict.
func (p *pack) generateCaseStudy(ctx context.Context, c *executor.Call, in businesspack.MarketingGenerateCaseStudyFromJobInput) (*businesspack.MarketingGenerateCaseStudyFromJobOutput, error) {
	jobID, err := executor.RecordID("job_id", in.JobID)
	if err != nil {
		return nil, err
	}
	format := cmp.Or(in.Format, businesspack.CaseStudyWebsiteSection)
	spec, ok := caseStudyFormats[format]
	if !ok {
		return nil, executor.Invalid("format %q is not blog, short or website_section", format)
	}
	jf, err := loadJobFacts(ctx, c, jobID)
	if err != nil {
		return nil, err
	}
	if jf.Status != "completed" {
		return nil, executor.Conflict("job %s is %s: a case study is written from a completed job", jobLabel(jf.Number), jf.Status)
	}
	loc, m, err := p.zoneAndModel(c.Tool.Name)
	if err != nil {
		return nil, err
	}
	suburb, err := jobSuburb(ctx, c.DB, jobID)
	if err != nil {
		return nil, err
	}
	var fs promptFacts
	fs.add("job", jobLabel(jf.Number))
	fs.add("suburb", suburb)
	if jf.StartDate != nil {
		fs.add("work dates", jobDates(jf.Job))
	}
	if jf.CompletedAt != nil {
		fs.add("completed on", jf.CompletedAt.In(loc))
	}
	fs.section("Scope of the work (quote lines)")
	for _, l := range jf.Lines {
		fs.add("line", fmt.Sprintf("%s (%s %s)", l.Description, l.Quantity, l.Unit))
	}
	var inspectionID *uuid.UUID
	var inspectionSummary, inspectionNotes *string
	if err := c.DB.QueryRow(ctx, `SELECT i.id, i.summary, i.notes FROM quotes q JOIN inspections i ON i.id = q.inspection_id
		WHERE q.id = $1`, jf.QuoteID).Scan(&inspectionID, &inspectionSummary, &inspectionNotes); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if inspectionID != nil {
		fs.section("What the inspection found")
		fs.add("summary", inspectionSummary)
		fs.add("notes", inspectionNotes)
		defects, err := defectLines(ctx, c.DB, *inspectionID, 15)
		if err != nil {
			return nil, err
		}
		for _, d := range defects {
			fs.add("defect", d)
		}
		measurements, err := queryTexts(ctx, c.DB, `SELECT concat_ws(' ', coalesce(label, kind), trim_scale(value)::text, unit)
			FROM inspection_measurements WHERE inspection_id = $1 ORDER BY created_at, id LIMIT 10`, *inspectionID)
		if err != nil {
			return nil, err
		}
		for _, ms := range measurements {
			fs.add("measurement", ms)
		}
	}
	fs.section("On the job")
	fs.add("job notes", jf.Notes)
	for _, n := range jf.SiteNotes {
		fs.add("site note", n.Note)
	}
	progress, err := queryTexts(ctx, c.DB, `SELECT summary FROM job_progress_updates WHERE job_id = $1 ORDER BY created_at, id LIMIT 10`, jobID)
	if err != nil {
		return nil, err
	}
	for _, s := range progress {
		fs.add("progress", s)
	}
	fs.add("completion notes", jf.CompletionNotes)
	photos, err := executor.QueryList(ctx, c.DB, scanAsset, `SELECT `+assetColumns+` FROM media_assets WHERE job_id = $1 ORDER BY taken_at NULLS LAST, created_at, id LIMIT 10`, jobID)
	if err != nil {
		return nil, err
	}
	photoRefs := []string{}
	for _, a := range photos {
		photoRefs = append(photoRefs, a.FileRef)
		fs.section(fmt.Sprintf("Photo %s", a.FileRef))
		fs.add("tags", a.Tags)
		fs.add("notes", a.Notes)
		fs.add("alt text", a.AltText)
	}
	before, after, err := jobMediaRefCounts(ctx, c.DB, jobID)
	if err != nil {
		return nil, err
	}
	if before+after > 0 {
		fs.add("before and after photos on file", fmt.Sprintf("%d before, %d after", before, after))
	}
	task := fmt.Sprintf(`Task: write a case study of this completed job as %s, at most %d characters, and a plain title (at most 80
characters) naming the work and the suburb. Tell it in the business's voice ("we"): the problem, what was
found, what was done, the result. Leave prices out.
Answer with JSON: {"title": "...", "draft": "..."}.`, spec.guide, spec.maxLength)
	var answer struct {
		Title string `json:"title"`
		Draft string `json:"draft"`
	}
	if err := writeCopy(ctx, m, task, &fs, caseStudySchema, spec.maxTokens, &answer); err != nil {
		return nil, err
	}
	draft := strings.TrimSpace(answer.Draft)
	if draft == "" {
		return nil, emptyAnswer(m, "draft", mustJSON(answer))
	}
	draft, trimmed := fitProse(draft, spec.maxLength)
	title, _ := fitText(foldSpace(answer.Title), 120)
	return &businesspack.MarketingGenerateCaseStudyFromJobOutput{Draft: draft, Title: title, JobID: jobID.String(), Format: format, Length: runeLen(draft), MaxLength: spec.maxLength,
		Trimmed: trimmed, Photos: photoRefs, WrittenBy: writtenBy(m)}, nil
}

// jobMediaRefCounts counts a job's before and after photo references.
func jobMediaRefCounts(ctx context.Context, db executor.DB, jobID uuid.UUID) (before, after int, err error) {
	err = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE stage = 'before'), count(*) FILTER (WHERE stage = 'after')
		FROM job_media_refs WHERE job_id = $1`, jobID).Scan(&before, &after)
	return before, after, err
}

// Google Business Profile local posts.
const gmbSummaryMax = 1500

// gmbActionTypes are the Business Profile API's call-to-action types of a local post.
var gmbActionTypes = []string{"BOOK", "ORDER", "SHOP", "LEARN_MORE", "SIGN_UP", "CALL"}

var gmbPostSchema = &llmtext.Schema{Name: "gmb_post", Doc: map[string]any{
	"type": "object",
	"properties": map[string]any{
		"summary":     map[string]any{"type": "string"},
		"action_type": map[string]any{"type": "string", "enum": gmbActionTypes},
	},
	"required":             []string{"summary", "action_type"},
	"additionalProperties": false,
}}

// generateGMBPost drafts a Google Business Profile update about a topic in an area, from the business's
// completed jobs there and the photos given. Nothing is posted.
func (p *pack) generateGMBPost(ctx context.Context, c *executor.Call, in businesspack.MarketingGenerateGMBPostInput) (*businesspack.MarketingGenerateGMBPostOutput, error) {
	topic, err := requiredText("topic", in.Topic)
	if err != nil {
		return nil, err
	}
	area, err := requiredText("suburb_or_region", in.SuburbOrRegion)
	if err != nil {
		return nil, err
	}
	// cta is an action type ("call"), a link to send people to, or words for the model to follow.
	var forcedAction, link, ctaWords string
	if cta := trimmedText(&in.CTA); cta != nil {
		action := strings.ToUpper(strings.NewReplacer(" ", "_", "-", "_").Replace(*cta))
		u, urlErr := url.Parse(*cta)
		switch {
		case slices.Contains(gmbActionTypes, action):
			forcedAction = action
		case urlErr == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "":
			link = *cta
		default:
			ctaWords = *cta
		}
	}
	lc, err := p.prepareLocalCopy(ctx, c, "asset_refs", in.AssetRefs, area, nil)
	if err != nil {
		return nil, err
	}
	var fs promptFacts
	fs.add("topic", topic)
	fs.add("area", area)
	fs.add("call to action wanted", ctaWords)
	fs.add("call to action type required", forcedAction)
	fs.add("link the button opens", link)
	lc.addTo(&fs)
	task := fmt.Sprintf(`Task: draft a Google Business Profile update (a "what's new" post) about the topic for people in the area.
summary: at most %d characters (the first 100 show in search), plain text, no hashtags, no phone numbers, no
links. action_type: the post's button, one of %s (CALL rings the business; the others open a link).
Answer with JSON: {"summary": "...", "action_type": "..."}.`, gmbSummaryMax, strings.Join(gmbActionTypes, ", "))
	var answer struct {
		Summary    string `json:"summary"`
		ActionType string `json:"action_type"`
	}
	m := lc.m
	if err := writeCopy(ctx, m, task, &fs, gmbPostSchema, 900, &answer); err != nil {
		return nil, err
	}
	summary := strings.TrimSpace(answer.Summary)
	if summary == "" {
		return nil, emptyAnswer(m, "summary", mustJSON(answer))
	}
	summary, trimmed := fitProse(summary, gmbSummaryMax)
	cta := businesspack.GMBCallToAction{ActionType: answer.ActionType}
	switch {
	case forcedAction != "":
		cta.ActionType = forcedAction
	case link != "" && cta.ActionType == "CALL":
		cta.ActionType = "LEARN_MORE" // a link needs a button that opens it
	}
	if link != "" && cta.ActionType != "CALL" {
		cta.URL = &link
	}
	post := businesspack.GMBPost{Summary: summary, TopicType: "STANDARD", CallToAction: cta, Media: []businesspack.GMBMedia{}}
	for i, a := range lc.assets {
		format := "PHOTO"
		if a.AssetType == "video" {
			format = "VIDEO"
		}
		post.Media = append(post.Media, businesspack.GMBMedia{SourceRef: lc.refs[i], MediaFormat: format})
	}
	return &businesspack.MarketingGenerateGMBPostOutput{Post: post, Topic: topic, SuburbOrRegion: area, Length: runeLen(summary), Trimmed: trimmed, Proof: lc.proof,
		WrittenBy: writtenBy(m)}, nil
}

// mustJSON is v as JSON, for showing a decoded answer in a receipt.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Content channels of marketing.schedule_content.
var contentChannels = []string{"website", "blog", "gmb", "meta", "google_ads", "email", "other"}

var channelLabels = map[string]string{"website": "the website", "blog": "the blog", "gmb": "Google Business Profile",
	"meta": "Facebook/Instagram", "google_ads": "Google Ads", "email": "email", "other": "other channels"}

// Bounds of a scheduled item.
const (
	maxScheduleItems   = 50
	maxContentTitle    = 200
	maxContentLength   = 10000
	contentPublishHour = 9
)

// contentItemFields are the fields an item may have (with the other names accepted for them).
var contentItemFields = map[string]string{
	"title": "title", "channel": "channel", "platform": "channel", "publish_at": "publish_at", "due_at": "publish_at",
	"publish_date": "publish_date", "due_date": "publish_date", "content": "content", "body": "content",
	"asset_refs": "asset_refs", "assets_refs": "asset_refs", "notes": "notes", "priority": "priority",
}

type scheduleContentInput struct {
	Items []json.RawMessage `json:"items"`
}

// scheduleContent puts content on the schedule: each item becomes a task due when it is to be published
// (os_tasks, so it shows in the task list) and a marketing_content_items row keeping its channel and copy.
// Every item is checked before any is written.
func (p *pack) scheduleContent(ctx context.Context, c *executor.Call, in scheduleContentInput) (*businesspack.MarketingScheduleContentOutput, error) {
	if len(in.Items) == 0 {
		return nil, executor.Invalid("items is empty: give at least one item to schedule")
	}
	if len(in.Items) > maxScheduleItems {
		return nil, executor.Invalid("items has %d items; schedule at most %d at a time", len(in.Items), maxScheduleItems)
	}
	loc, err := p.zone()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	items := make([]businesspack.ContentItem, len(in.Items))
	for i, raw := range in.Items {
		if items[i], err = parseContentItem(raw, loc, now); err != nil {
			return nil, executor.Invalid("items[%d]: %s", i, strings.TrimPrefix(err.Error(), "validation_error: "))
		}
	}
	out := businesspack.MarketingScheduleContentOutput{CreatedTaskIDs: []string{}, Items: []businesspack.ScheduledContent{}}
	for i, it := range items {
		_, assets, err := resolveAssetRefs(ctx, c.DB, fmt.Sprintf("items[%d].asset_refs", i), it.AssetRefs)
		if err != nil {
			return nil, err
		}
		assetIDs := []uuid.UUID{}
		for _, a := range assets {
			assetIDs = append(assetIDs, a.AssetID)
		}
		itemID := uuid.New()
		title, _ := fitText("Publish on "+channelLabels[it.Channel]+": "+it.Title, maxContentTitle)
		var description strings.Builder
		if it.Content != nil {
			description.WriteString(*it.Content)
		}
		for _, a := range assets {
			fmt.Fprintf(&description, "\n\nAsset: %s", a.FileRef)
		}
		if it.Notes != nil {
			fmt.Fprintf(&description, "\n\nNotes: %s", *it.Notes)
		}
		var taskID uuid.UUID
		if err := c.DB.QueryRow(ctx, `INSERT INTO os_tasks (title, description, priority, due_at, domain, context_type, context_id)
			VALUES ($1, nullif($2, ''), $3, $4, 'business', 'marketing_content', $5) RETURNING id`,
			title, strings.TrimSpace(description.String()), it.Priority, *it.PublishAt, itemID.String()).Scan(&taskID); err != nil {
			return nil, err
		}
		if _, err := c.DB.Exec(ctx, `INSERT INTO marketing_content_items (id, task_id, channel, title, publish_at, content, asset_ids, notes)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, itemID, taskID, it.Channel, it.Title, *it.PublishAt, it.Content, assetIDs, it.Notes); err != nil {
			return nil, err
		}
		ids := make([]string, len(assetIDs))
		for j, id := range assetIDs {
			ids[j] = id.String()
		}
		out.CreatedTaskIDs = append(out.CreatedTaskIDs, taskID.String())
		out.Items = append(out.Items, businesspack.ScheduledContent{TaskID: taskID.String(), ContentItemID: itemID.String(), Title: it.Title, Channel: it.Channel,
			PublishAt: *it.PublishAt, AssetIDs: ids})
	}
	return &out, nil
}

// parseContentItem reads one item key by key, each field under any of its names, and checks it: known
// fields only, a title, a channel and a publish time that has not passed. Its PublishAt is when it goes
// out: publish_at, or publish_date at 9 am in the business's time zone.
func parseContentItem(raw json.RawMessage, loc *time.Location, now time.Time) (businesspack.ContentItem, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return businesspack.ContentItem{}, executor.Invalid("is not an object")
	}
	byName := map[string]json.RawMessage{}
	for k, v := range fields {
		name, ok := contentItemFields[k]
		if !ok {
			return businesspack.ContentItem{}, executor.Invalid("unknown field %q; an item has title, channel, publish_at or publish_date, content, asset_refs, notes and priority", k)
		}
		if _, dup := byName[name]; dup {
			return businesspack.ContentItem{}, executor.Invalid("%s is given twice (under two names)", name)
		}
		byName[name] = v
	}
	str := func(name string) (*string, error) {
		v, ok := byName[name]
		if !ok || string(v) == "null" {
			return nil, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, executor.Invalid("%s is %s, not a string", name, v)
		}
		return trimmedText(&s), nil
	}
	it := businesspack.ContentItem{Priority: "normal", AssetRefs: []string{}}
	title, err := str("title")
	if err != nil {
		return it, err
	}
	if title == nil {
		return it, executor.Invalid("title is missing")
	}
	if it.Title = foldSpace(*title); runeLen(it.Title) > maxContentTitle {
		return it, executor.Invalid("title has %d characters (at most %d)", runeLen(it.Title), maxContentTitle)
	}
	channel, err := str("channel")
	if err != nil {
		return it, err
	}
	if channel == nil {
		return it, executor.Invalid("channel is missing (one of %s)", strings.Join(contentChannels, ", "))
	}
	if it.Channel = strings.ToLower(*channel); !slices.Contains(contentChannels, it.Channel) {
		return it, executor.Invalid("channel %q is not one of %s", *channel, strings.Join(contentChannels, ", "))
	}
	publishAt, err := str("publish_at")
	if err != nil {
		return it, err
	}
	publishDate, err := str("publish_date")
	if err != nil {
		return it, err
	}
	switch {
	case publishAt != nil && publishDate != nil:
		return it, executor.Invalid("give publish_at or publish_date, not both")
	case publishAt != nil:
		at, err := time.Parse(time.RFC3339, *publishAt)
		if err != nil {
			return it, executor.Invalid("publish_at %q is not an RFC 3339 date-time", *publishAt)
		}
		if at.Before(now) {
			return it, executor.Invalid("publish_at %s has passed", *publishAt)
		}
		it.PublishAt = &at
	case publishDate != nil:
		d, err := businesspack.ParseDate(*publishDate)
		if err != nil {
			return it, executor.Invalid("publish_date %q is not a date (YYYY-MM-DD)", *publishDate)
		}
		if d.Before(businesspack.DateOf(now.In(loc))) {
			return it, executor.Invalid("publish_date %s has passed", *publishDate)
		}
		at := d.In(loc).Add(contentPublishHour * time.Hour)
		it.PublishAt, it.PublishDate = &at, &d
	default:
		return it, executor.Invalid("publish_at (a date-time) or publish_date (YYYY-MM-DD) is missing")
	}
	if it.Content, err = str("content"); err != nil {
		return it, err
	}
	if it.Content != nil && runeLen(*it.Content) > maxContentLength {
		return it, executor.Invalid("content has %d characters (at most %d)", runeLen(*it.Content), maxContentLength)
	}
	if it.Notes, err = str("notes"); err != nil {
		return it, err
	}
	priority, err := str("priority")
	if err != nil {
		return it, err
	}
	if priority != nil {
		if it.Priority = strings.ToLower(*priority); !slices.Contains([]string{"low", "normal", "high"}, it.Priority) {
			return it, executor.Invalid("priority %q is not low, normal or high", *priority)
		}
	}
	if v, ok := byName["asset_refs"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &it.AssetRefs); err != nil {
			return it, executor.Invalid("asset_refs is %s, not a list of asset ids or file references", v)
		}
	}
	return it, nil
}

// Campaign metrics: names are snake_case; counts are whole numbers; money is dollars (or cents in a
// *_cents metric); none is negative but a rate or a return may be.
var (
	metricNameRe  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	countMetrics  = []string{"impressions", "reach", "clicks", "calls", "leads", "conversions", "messages", "bookings", "views", "website_visits", "direction_requests"}
	moneyMetrics  = []string{"spend", "cost", "revenue", "budget", "cost_per_click", "cost_per_lead"}
	metricReplace = strings.NewReplacer(" ", "_", "-", "_")
)

// logCampaignResultInput is marketing.log_campaign_result's input as the handler reads it: each metric as
// the JSON given (checked one by one, named in errors).
type logCampaignResultInput struct {
	businesspack.MarketingLogCampaignResultInput
	Metrics map[string]json.RawMessage `json:"metrics"`
}

// logCampaignResult records a campaign's results: numeric metrics (names folded to snake_case), checked,
// with the ratios they imply.
func logCampaignResult(ctx context.Context, c *executor.Call, in logCampaignResultInput) (*businesspack.MarketingLogCampaignResultOutput, error) {
	if len(in.Metrics) == 0 {
		return nil, executor.Invalid("metrics is empty: give at least one number (impressions, clicks, leads, spend...)")
	}
	if !in.PeriodStart.IsZero() && !in.PeriodEnd.IsZero() && in.PeriodEnd.Before(in.PeriodStart) {
		return nil, executor.Invalid("period_end %s is before period_start %s", in.PeriodEnd, in.PeriodStart)
	}
	metrics := map[string]float64{}
	stored := map[string]json.Number{}
	for k, raw := range in.Metrics {
		name := metricReplace.Replace(strings.ToLower(strings.TrimSpace(k)))
		if !metricNameRe.MatchString(name) {
			return nil, executor.Invalid("metric name %q is not a name like clicks or cost_per_lead", k)
		}
		if _, dup := metrics[name]; dup {
			return nil, executor.Invalid("metric %s is given twice", name)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, executor.Invalid("metrics.%s: %v", k, err)
		}
		num, ok := v.(json.Number)
		if !ok {
			return nil, executor.Invalid("metrics.%s is %s, not a number", k, raw)
		}
		f, err := num.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, executor.Invalid("metrics.%s is %s, not a finite number", k, num)
		}
		isCount := slices.Contains(countMetrics, name) || strings.HasSuffix(name, "_cents")
		switch {
		case isCount && (f < 0 || f != math.Trunc(f)):
			return nil, executor.Invalid("metrics.%s is %s; it must be a whole number, 0 or more", k, num)
		case slices.Contains(moneyMetrics, name) && f < 0:
			return nil, executor.Invalid("metrics.%s is %s; an amount of money cannot be negative", k, num)
		}
		metrics[name], stored[name] = f, num
	}
	if clicks, ok := metrics["clicks"]; ok {
		if impressions, ok := metrics["impressions"]; ok && clicks > impressions {
			return nil, executor.Invalid("clicks (%v) exceed impressions (%v)", clicks, impressions)
		}
	}
	doc, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	out := businesspack.MarketingLogCampaignResultOutput{Channel: in.Channel, Campaign: trimmedText(&in.Campaign), PeriodStart: givenDate(in.PeriodStart), PeriodEnd: givenDate(in.PeriodEnd),
		Metrics: metrics, Derived: deriveCampaign(metrics)}
	err = c.DB.QueryRow(ctx, `INSERT INTO marketing_campaign_results (channel, campaign, period_start, period_end, metrics, notes)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_at`, in.Channel, out.Campaign, out.PeriodStart, out.PeriodEnd, doc,
		trimmedText(&in.Notes)).Scan(&out.LogID, &out.LoggedAt)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// deriveCampaign computes the usual ratios; spend is in dollars ("spend", else "spend_cents" / 100).
func deriveCampaign(m map[string]float64) businesspack.CampaignDerived {
	ratio := func(num, den string, digits float64) *float64 {
		n, ok1 := m[num]
		d, ok2 := m[den]
		if !ok1 || !ok2 || d == 0 {
			return nil
		}
		r := math.Round(n/d*math.Pow(10, digits)) / math.Pow(10, digits)
		return &r
	}
	if _, ok := m["spend"]; !ok {
		if cents, ok := m["spend_cents"]; ok {
			m = maps.Clone(m)
			m["spend"] = cents / 100
		}
	}
	return businesspack.CampaignDerived{
		ClickThroughRate: ratio("clicks", "impressions", 4),
		CostPerClick:     ratio("spend", "clicks", 2),
		CostPerLead:      ratio("spend", "leads", 2),
		ConversionRate:   ratio("conversions", "clicks", 4),
	}
}
