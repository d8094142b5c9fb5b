package businessplan

import (
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/packs/internal/plantest"
	"github.com/stretchr/testify/require"
)

// now is when the rule tests plan.
var now = plantest.Now

// TestMediaRulesPlan: what each rule makes of a message, as JSON: unknowns left out (the tool's default or
// the run's context supplies them), the words mapped to the tools' enums, and what is missing asked for.
func TestMediaRulesPlan(t *testing.T) {
	p, _ := plantest.Planner(t, mediaRules, time.UTC)
	const a, b = "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f"
	plantest.PlansAs(t, p, now, []plantest.Case{
		{"register video clip.mp4", businesspack.RegisterAsset, `{"file_ref": "clip.mp4", "asset_type": "video"}`},
		{"upload doc gemfs://q/quote.pdf for job 5B0F1C39-8C8F-4A35-9D0E-6B1F1B7F3A10 in Glebe", businesspack.RegisterAsset,
			`{"file_ref": "gemfs://q/quote.pdf", "asset_type": "document", "job_id": "` + a + `", "suburb": "Glebe"}`},
		{"save file notes.docx for lead " + a, businesspack.RegisterAsset, `{"file_ref": "notes.docx", "asset_type": "other"}`},
		{"tag the photo with ridge, after", businesspack.TagAsset, `{"tags": ["ridge", "after"]}`},
		{"write alt text for asset " + a + ", at most 500 characters", businesspack.GenerateAltText, `{"asset_id": "` + a + `", "max_length": 200}`},
		{"write alt text for photo " + a + " up to 10 chars", businesspack.GenerateAltText, `{"asset_id": "` + a + `", "max_length": 40}`},
		{"write a caption for the photo", businesspack.GenerateCaption, `{}`},
		{"write a caption for asset " + a + " for google business", businesspack.GenerateCaption, `{"asset_id": "` + a + `", "platform": "gmb"}`},
		{"write a caption for asset " + a + " for the website", businesspack.GenerateCaption, `{"asset_id": "` + a + `", "platform": "website"}`},
		{"suggest names for photos " + a + " " + b, businesspack.ProposeRenameMap, `{"asset_ids": ["` + a + `", "` + b + `"], "dry_run_only": true}`},
		{"export a website pack of " + b, businesspack.ExportWebsitePack, `{"asset_ids": ["` + b + `"]}`},
		{"draft a google business profile post on gutter guards in the Hills District", businesspack.GenerateGMBPost,
			`{"topic": "gutter guards", "suburb_or_region": "the Hills District"}`},
		{"write some instagram ads for free inspections around Parramatta", businesspack.GenerateMetaAdPack,
			`{"offer": "free inspections", "suburb_or_region": "Parramatta"}`},
		{"generate google ads for gutter cleaning across Sydney", businesspack.GenerateGoogleAdsPack, `{"service": "gutter cleaning", "region": "Sydney"}`},
		{"write a case study for job " + a + " as a website section", businesspack.GenerateCaseStudyFromJob, `{"job_id": "` + a + `", "format": "website_section"}`},
		{"make a case study short", businesspack.GenerateCaseStudyFromJob, `{"format": "short"}`},
		{"record results for google ads: 1,200 clicks and 4.5 leads", businesspack.LogCampaignResult,
			`{"channel": "google_ads", "metrics": {"clicks": 1200, "leads": 4.5}}`},
		{"log results of the tiktok campaign: 3 leads", businesspack.LogCampaignResult, `{"channel": "other", "metrics": {"leads": 3}}`},
	})

	for message, field := range map[string]string{
		"propose names for the photos from friday":  "asset_ids",
		"export a website pack of the roof photos":  "asset_ids",
		"write a gmb post about roof restorations":  "suburb_or_region",
		"log campaign results for meta: great week": "metrics",
	} {
		asked, _ := plantest.Refused(t, p, now, message)
		require.Equal(t, field, asked, message)
	}
}
