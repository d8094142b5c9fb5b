package businesspack

import "time"

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
	PeriodStart Date               `json:"period_start,omitzero"`
	PeriodEnd   Date               `json:"period_end,omitzero"`
}

// AreaProof is what the business's records prove about its work in an area, which marketing copy is
// written from: completed jobs there, those whose quote includes the service, and examples of that work.
type AreaProof struct {
	Area              string   `json:"area"`
	CompletedJobs     int      `json:"completed_jobs"`
	CompletedWithWork int      `json:"completed_with_service"`
	CompletedAnywhere int      `json:"completed_jobs_anywhere"`
	ExampleLineItems  []string `json:"example_work"`
	// ServiceSearchedFor is the service the quote lines were searched for, nil for none.
	ServiceSearchedFor *string `json:"service"`
}

// MetaAd is one variant of a Meta ad: its texts, Meta's call-to-action type and the photo it suits (a ref
// given, or nil).
type MetaAd struct {
	Variant      int     `json:"variant"`
	PrimaryText  string  `json:"primary_text"`
	Headline     string  `json:"headline"`
	Description  string  `json:"description"`
	CallToAction string  `json:"call_to_action"`
	AssetRef     *string `json:"asset_ref"`
}

// MarketingGenerateMetaAdPackOutput is marketing.generate_meta_ad_pack's result: the ads kept, and why the
// others were dropped.
type MarketingGenerateMetaAdPackOutput struct {
	Ads            []MetaAd  `json:"ads"`
	Offer          string    `json:"offer"`
	SuburbOrRegion string    `json:"suburb_or_region"`
	Proof          AreaProof `json:"proof"`
	Dropped        []string  `json:"dropped"`
	WrittenBy      string    `json:"written_by"`
}

// GoogleKeyword is a Google Ads keyword and its match type (phrase, exact or broad).
type GoogleKeyword struct {
	Text      string `json:"text"`
	MatchType string `json:"match_type"`
}

// GoogleAdsPack is a responsive search ad within Google's limits, its keywords and its landing page (nil
// for none).
type GoogleAdsPack struct {
	Headlines        []string        `json:"headlines"`
	Descriptions     []string        `json:"descriptions"`
	Keywords         []GoogleKeyword `json:"keywords"`
	NegativeKeywords []string        `json:"negative_keywords"`
	Path1            string          `json:"path1"`
	Path2            string          `json:"path2"`
	FinalURL         *string         `json:"final_url"`
}

// MarketingGenerateGoogleAdsPackOutput is marketing.generate_google_ads_pack's result.
type MarketingGenerateGoogleAdsPackOutput struct {
	Pack      GoogleAdsPack `json:"pack"`
	Service   string        `json:"service"`
	Region    string        `json:"region"`
	Proof     AreaProof     `json:"proof"`
	Dropped   []string      `json:"dropped"`
	WrittenBy string        `json:"written_by"`
}

// MarketingGenerateCaseStudyFromJobOutput is marketing.generate_case_study_from_job's result: the draft,
// its length and limit, and the job's photos it names.
type MarketingGenerateCaseStudyFromJobOutput struct {
	Draft     string   `json:"draft"`
	Title     string   `json:"title"`
	JobID     string   `json:"job_id"`
	Format    string   `json:"format"`
	Length    int      `json:"length"`
	MaxLength int      `json:"max_length"`
	Trimmed   bool     `json:"trimmed"`
	Photos    []string `json:"photos"`
	WrittenBy string   `json:"written_by"`
}

// GMBCallToAction is a Business Profile post's button: its action type and the link it opens (nil for CALL).
type GMBCallToAction struct {
	ActionType string  `json:"action_type"`
	URL        *string `json:"url"`
}

// GMBMedia is a photo or video of a Business Profile post, by the ref given.
type GMBMedia struct {
	SourceRef   string `json:"source_ref"`
	MediaFormat string `json:"media_format"`
}

// GMBPost mirrors the Business Profile API's LocalPost (summary, topicType, callToAction, media).
type GMBPost struct {
	Summary      string          `json:"summary"`
	TopicType    string          `json:"topic_type"`
	CallToAction GMBCallToAction `json:"call_to_action"`
	Media        []GMBMedia      `json:"media"`
}

// MarketingGenerateGMBPostOutput is marketing.generate_gmb_post's result.
type MarketingGenerateGMBPostOutput struct {
	Post           GMBPost   `json:"post"`
	Topic          string    `json:"topic"`
	SuburbOrRegion string    `json:"suburb_or_region"`
	Length         int       `json:"length"`
	Trimmed        bool      `json:"trimmed"`
	Proof          AreaProof `json:"proof"`
	WrittenBy      string    `json:"written_by"`
}

// ScheduledContent is an item marketing.schedule_content put on the schedule: its task and content row.
type ScheduledContent struct {
	TaskID        string    `json:"task_id"`
	ContentItemID string    `json:"content_item_id"`
	Title         string    `json:"title"`
	Channel       string    `json:"channel"`
	PublishAt     time.Time `json:"publish_at"`
	AssetIDs      []string  `json:"asset_ids"`
}

// ContentItem is an item of marketing.schedule_content: what goes out, where and when (PublishAt, or
// PublishDate at 9 am in the business's time zone), with its copy, its assets (ids or file references),
// notes and priority (low, normal or high; normal when left out). The tool also takes an item's fields
// under other names (platform for channel, due_at for publish_at, due_date for publish_date, body for
// content, assets_refs for asset_refs).
type ContentItem struct {
	Title       string     `json:"title"`
	Channel     string     `json:"channel"`
	PublishAt   *time.Time `json:"publish_at,omitempty"`
	PublishDate *Date      `json:"publish_date,omitempty"`
	Content     *string    `json:"content,omitempty"`
	AssetRefs   []string   `json:"asset_refs,omitempty"`
	Notes       *string    `json:"notes,omitempty"`
	Priority    string     `json:"priority,omitempty"`
}

// MarketingScheduleContentInput is marketing.schedule_content's input: the items to schedule, in order.
type MarketingScheduleContentInput struct {
	Items []ContentItem `json:"items"`
}

// MarketingScheduleContentOutput is marketing.schedule_content's result.
type MarketingScheduleContentOutput struct {
	CreatedTaskIDs []string           `json:"created_task_ids"`
	Items          []ScheduledContent `json:"items"`
}

// CampaignDerived are the ratios a campaign's metrics imply (nil where a metric is missing or zero).
type CampaignDerived struct {
	ClickThroughRate *float64 `json:"click_through_rate"`
	CostPerClick     *float64 `json:"cost_per_click"`
	CostPerLead      *float64 `json:"cost_per_lead"`
	ConversionRate   *float64 `json:"conversion_rate"`
}

// MarketingLogCampaignResultOutput is marketing.log_campaign_result's result: the row logged, its days nil
// when not given.
type MarketingLogCampaignResultOutput struct {
	LogID       string             `json:"log_id"`
	Channel     string             `json:"channel"`
	Campaign    *string            `json:"campaign"`
	PeriodStart *Date              `json:"period_start"`
	PeriodEnd   *Date              `json:"period_end"`
	Metrics     map[string]float64 `json:"metrics"`
	Derived     CampaignDerived    `json:"derived"`
	LoggedAt    time.Time          `json:"logged_at"`
}
