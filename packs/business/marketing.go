package businesspack

// The marketing tools: posts, ad packs and case studies drafted for people to publish, scheduled content,
// and campaigns' numbers.
const (
	GenerateMetaAdPack       = "marketing.generate_meta_ad_pack"
	GenerateGoogleAdsPack    = "marketing.generate_google_ads_pack"
	GenerateCaseStudyFromJob = "marketing.generate_case_study_from_job"
	GenerateGMBPost          = "marketing.generate_gmb_post"
	ScheduleContent          = "marketing.schedule_content"
	LogCampaignResult        = "marketing.log_campaign_result"
)

// MarketingTools are the marketing tools, in the registry's order.
var MarketingTools = []string{GenerateMetaAdPack, GenerateGoogleAdsPack, GenerateCaseStudyFromJob, GenerateGMBPost, ScheduleContent, LogCampaignResult}

// Campaign channels (marketing.log_campaign_result's enum).
const (
	ChannelGoogleAds = "google_ads"
	ChannelMeta      = "meta"
	ChannelGMB       = "gmb"
	ChannelOther     = "other"
)

// Case study formats (marketing.generate_case_study_from_job's enum).
const (
	CaseStudyBlog           = "blog"
	CaseStudyShort          = "short"
	CaseStudyWebsiteSection = "website_section"
)

// MarketingGenerateGMBPostInput is marketing.generate_gmb_post's input.
type MarketingGenerateGMBPostInput struct {
	Topic          string   `json:"topic"`
	SuburbOrRegion string   `json:"suburb_or_region"`
	CTA            string   `json:"cta,omitempty"`
	AssetRefs      []string `json:"asset_refs,omitempty"`
}

// MarketingGenerateMetaAdPackInput is marketing.generate_meta_ad_pack's input.
type MarketingGenerateMetaAdPackInput struct {
	Offer          string   `json:"offer"`
	SuburbOrRegion string   `json:"suburb_or_region"`
	Service        string   `json:"service,omitempty"`
	AssetsRefs     []string `json:"assets_refs,omitempty"`
}

// MarketingGenerateGoogleAdsPackInput is marketing.generate_google_ads_pack's input.
type MarketingGenerateGoogleAdsPackInput struct {
	Service     string `json:"service"`
	Region      string `json:"region"`
	LandingPage string `json:"landing_page,omitempty"`
}

// MarketingGenerateCaseStudyFromJobInput is marketing.generate_case_study_from_job's input. The job is the
// run's context's when JobID is empty.
type MarketingGenerateCaseStudyFromJobInput struct {
	JobID  string `json:"job_id,omitempty"`
	Format string `json:"format,omitempty"`
}

// MarketingLogCampaignResultInput is marketing.log_campaign_result's input.
type MarketingLogCampaignResultInput struct {
	Channel     string             `json:"channel"`
	Metrics     map[string]float64 `json:"metrics"`
	Notes       string             `json:"notes,omitempty"`
	Campaign    string             `json:"campaign,omitempty"`
	PeriodStart string             `json:"period_start,omitempty"`
	PeriodEnd   string             `json:"period_end,omitempty"`
}
