package businessplan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	businesspack "github.com/gemhq/gem/packs/business"

	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
)

// draftVerb is how people ask for marketing copy to be drafted: "make a facebook ad pack", "put together
// some google ads".
const draftVerb = `(?:write|draft|create|make|generate|put\s+together|prepare|build|whip\s+up|come\s+up\s+with)`

// fileRefPattern matches a file a message names: a URL of any scheme (gemfs://, https://) or a file name
// with a photo, video or document's extension.
const fileRefPattern = `[a-z][a-z0-9+.-]*://\S+|\S+\.(?:jpe?g|png|heic|webp|gif|mp4|mov|pdf|docx?)`

// mediaRules plan the media tools (assets, their tags, alt texts, captions, names and website packs), then
// the marketing tools (posts, ad packs, case studies, campaign results).
var mediaRules = []planner.Rule{
	// Media.
	{
		Name: "register_asset", Tool: businesspack.RegisterAsset,
		Help:     "register a photo, video or document (for a job, in a suburb)",
		Examples: []string{"register photo https://photos.example.com/baker/north-face.jpg for the job in Newtown"},
		Patterns: []string{`^(?:please\s+)?(?:register|add|upload|save)\s+(?:an?\s+|the\s+)?(?P<type>photo|picture|image|video|document|doc|file)\s+(?P<ref>` + fileRefPattern + `)(?P<rest>.*)$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.MediaRegisterAssetInput{FileRef: m.Group("ref"), AssetType: assetType(m.Group("type"))}
			rest := m.Group("rest")
			if ids := planner.UUIDsIn(rest); len(ids) > 0 && planner.HasWord(rest, "job") {
				in.JobID = ids[0]
			}
			in.Suburb = planner.PlaceIn(rest)
			return in, nil
		},
	},
	{
		Name: "tag_asset", Tool: businesspack.TagAsset,
		Help:     "tag a photo or file",
		Examples: []string{"tag asset 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 with roof, before, north face"},
		Patterns: []string{`^(?:please\s+)?tag\s+(?:the\s+)?(?:asset|photo|picture|image|file)(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:with|as)\s+(?P<tags>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.MediaTagAssetInput{AssetID: m.ID(), Tags: planner.SplitList(m.Group("tags"))}, nil
		},
	},
	{
		Name: "alt_text", Tool: businesspack.GenerateAltText,
		Help:     "write alt text for a photo",
		Examples: []string{"write alt text for asset 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		Patterns: []string{`^(?:please\s+)?(?:write|generate|create|make)\s+(?:the\s+|some\s+)?alt[\s-]*text\s+(?:for\s+)?(?:the\s+)?(?:asset|photo|picture|image)?\s*(?P<id>` + planner.UUIDPattern + `)?(?:\s*,?\s*(?:up\s+to|max(?:imum)?|at\s+most)\s+(?P<max>\d+)\s+(?:characters|chars))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.MediaGenerateAltTextInput{AssetID: m.ID()}
			if s := m.Group("max"); s != "" {
				n, _ := strconv.Atoi(s)
				in.MaxLength = min(max(n, 40), 200)
			}
			return in, nil
		},
	},
	{
		Name: "caption", Tool: businesspack.GenerateCaption,
		Help:     "write a caption for a photo (for the website, GMB or Meta)",
		Examples: []string{"write a caption for asset 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 for instagram"},
		Patterns: []string{`^(?:please\s+)?(?:write|generate|create|make)\s+(?:an?\s+|the\s+)?caption\s+(?:for\s+)?(?:the\s+)?(?:asset|photo|picture|image)?\s*(?P<id>` + planner.UUIDPattern + `)?(?:\s+(?:for|on)\s+(?:the\s+)?(?P<platform>website|gmb|google(?:\s+business)?|facebook|instagram|meta|other))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.MediaGenerateCaptionInput{AssetID: m.ID()}
			switch p := strings.ToLower(m.Group("platform")); {
			case p == "":
			case strings.HasPrefix(p, "google") || p == "gmb":
				in.Platform = businesspack.PlatformGMB
			case p == "facebook" || p == "instagram" || p == "meta":
				in.Platform = businesspack.PlatformMeta
			default:
				in.Platform = p
			}
			return in, nil
		},
	},
	{
		Name: "rename_map", Tool: businesspack.ProposeRenameMap,
		Help:     "propose clear file names for photos (nothing is renamed)",
		Examples: []string{"propose names for assets 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10, 0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f"},
		Patterns: []string{`^(?:please\s+)?(?:propose|suggest)\s+(?:new\s+|better\s+)?(?:file\s*)?names\s+for\s+(?:the\s+)?(?:assets?|photos?|pictures?|images?|files?)\s+(?P<ids>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			ids := planner.UUIDsIn(m.Group("ids"))
			if len(ids) == 0 {
				return nil, planner.Missing("asset_ids", "which assets? Give their ids")
			}
			// Sent, not left to the default: the help promises that nothing is renamed.
			proposeOnly := true
			return businesspack.MediaProposeRenameMapInput{AssetIDs: ids, DryRunOnly: &proposeOnly}, nil
		},
	},
	{
		Name: "website_pack", Tool: businesspack.ExportWebsitePack,
		Help:     "export photos as a website pack (a zip with alt texts and captions)",
		Examples: []string{"export a website pack of assets 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10, 0e6b1f1b-7f3a-4a35-9d0e-5b0f1c398c8f"},
		Patterns: []string{`^(?:please\s+)?(?:export|make|create|build)\s+(?:an?\s+|the\s+)?website\s+pack\s+(?:of|for|with)\s+(?:the\s+)?(?:assets?|photos?|pictures?|images?)?\s*(?P<ids>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			ids := planner.UUIDsIn(m.Group("ids"))
			if len(ids) == 0 {
				return nil, planner.Missing("asset_ids", "which assets? Give their ids")
			}
			return businesspack.MediaExportWebsitePackInput{AssetIDs: ids}, nil
		},
	},
	// Marketing.
	{
		Name: "gmb_post", Tool: businesspack.GenerateGMBPost,
		Help:     "draft a Google Business Profile post on a topic, for a suburb or region",
		Examples: []string{"write a gmb post about our roof restorations for Penrith"},
		Patterns: []string{`^(?:please\s+)?` + draftVerb + `\s+(?:an?\s+)?(?:gmb|google(?:\s+my)?\s+business(?:\s+profile)?)\s+post\s+(?:about|on)\s+(?P<rest>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			topic, region, err := topicAndRegion(m.Group("rest"))
			if err != nil {
				return nil, err
			}
			return businesspack.MarketingGenerateGMBPostInput{Topic: topic, SuburbOrRegion: region}, nil
		},
	},
	{
		Name: "meta_ads", Tool: businesspack.GenerateMetaAdPack,
		Help:     "draft Meta (Facebook, Instagram) ads for an offer, in a suburb or region",
		Examples: []string{"make a facebook ad pack for 10% off gutter guard in the Blue Mountains"},
		Patterns: []string{`^(?:please\s+)?` + draftVerb + `\s+(?:an?\s+|some\s+)?(?:meta|facebook|instagram|fb)\s+ads?(?:\s+pack)?\s+(?:for|about|on)\s+(?P<rest>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			offer, region, err := topicAndRegion(m.Group("rest"))
			if err != nil {
				return nil, err
			}
			return businesspack.MarketingGenerateMetaAdPackInput{Offer: offer, SuburbOrRegion: region}, nil
		},
	},
	{
		Name: "google_ads", Tool: businesspack.GenerateGoogleAdsPack,
		Help:     "draft a Google Ads pack for a service, in a region",
		Examples: []string{"make a google ads pack for roof restoration in Western Sydney"},
		Patterns: []string{`^(?:please\s+)?` + draftVerb + `\s+(?:an?\s+|some\s+)?google\s+ads?(?:\s+pack)?\s+(?:for|about|on)\s+(?P<rest>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			service, region, err := topicAndRegion(m.Group("rest"))
			if err != nil {
				return nil, err
			}
			return businesspack.MarketingGenerateGoogleAdsPackInput{Service: service, Region: region}, nil
		},
	},
	{
		Name: "case_study", Tool: businesspack.GenerateCaseStudyFromJob,
		Help:     "write a case study of a job (blog, short or website section)",
		Examples: []string{"write a case study for the job as a blog post"},
		Patterns: []string{`^(?:please\s+)?(?:write|draft|create|make|generate)\s+(?:an?\s+)?case\s+study(?:\s+(?:for|from|about|on|of)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s+(?:as\s+(?:an?\s+)?)?(?P<format>blog(?:\s+post)?|short|website\s+section))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.MarketingGenerateCaseStudyFromJobInput{JobID: m.ID()}
			switch f := strings.ToLower(m.Group("format")); {
			case strings.HasPrefix(f, "blog"):
				in.Format = businesspack.CaseStudyBlog
			case f == "short":
				in.Format = businesspack.CaseStudyShort
			case f != "":
				in.Format = businesspack.CaseStudyWebsiteSection
			}
			return in, nil
		},
	},
	{
		Name: "campaign_result", Tool: businesspack.LogCampaignResult,
		Help:     "log a campaign's numbers (google ads, meta, gmb or other)",
		Examples: []string{"log campaign results for meta: 12 leads, 3 jobs, $450 spend"},
		Patterns: []string{`^(?:please\s+)?(?:log|record)\s+(?:the\s+|a\s+)?(?:campaign\s+)?results?\s+(?:for|from|of)\s+(?:the\s+)?(?P<channel>google\s+ads|google\s+business|gmb|meta|facebook|instagram|[\w-]+)(?:\s+campaign)?\s*[:\-]\s*(?P<metrics>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			metrics := map[string]float64{}
			for _, sm := range metricRe.FindAllStringSubmatch(m.Group("metrics"), -1) {
				v, err := strconv.ParseFloat(strings.ReplaceAll(sm[2], ",", ""), 64)
				if err != nil {
					continue
				}
				metrics[planner.Slug(sm[3])] = v
			}
			if len(metrics) == 0 {
				return nil, planner.Missing("metrics", `which numbers? For example "12 leads, 3 jobs, $450 spend"`)
			}
			channel := campaignChannel(m.Group("channel"))
			if _, err := m.Enum("channel", channel); err != nil {
				channel = businesspack.ChannelOther
			}
			return businesspack.MarketingLogCampaignResultInput{Channel: channel, Metrics: metrics}, nil
		},
	},
}

// mediaSentences are what the answer says of the media and marketing tools' calls; the others get the
// generic sentence (plan_test.go says why).
var mediaSentences = run.Sentences{
	businesspack.ScheduleContent: run.Says(func(_ struct{}, out businesspack.MarketingScheduleContentOutput, when run.When) string {
		return run.List(out.Items, "item scheduled", "items scheduled", func(it businesspack.ScheduledContent) string {
			return fmt.Sprintf("%s on %s, %s", it.Title, it.Channel, when(it.PublishAt))
		})
	}, nil),
}

var (
	metricRe = regexp.MustCompile(`(?i)(\$?)\s*(\d[\d,]*(?:\.\d+)?)\s*(?:in\s+)?([a-z][a-z ]*?)\s*(?:,|;|\band\b|$)`)
	regionRe = regexp.MustCompile(`\s+(?:for|in|around|across)\s+(?:the\s+)?([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)\s*[.!]*$`)
)

// topicAndRegion splits "roof restorations for Penrith" into its topic and its (capitalised) place.
func topicAndRegion(text string) (string, string, error) {
	loc := regionRe.FindStringSubmatchIndex(text)
	if loc == nil {
		return "", "", planner.Missing("suburb_or_region", `for which suburb or region? End with it, like "... for Penrith"`)
	}
	region := text[loc[2]:loc[3]]
	if strings.HasPrefix(text[loc[0]:], " in the ") || strings.HasPrefix(text[loc[0]:], " for the ") || strings.HasPrefix(text[loc[0]:], " around the ") {
		region = "the " + region
	}
	return planner.CleanTitle(text[:loc[0]]), region, nil
}

// campaignChannel is the channel a campaign's words name: google_ads, meta or gmb, else the words as said
// (which the tool's enum may not have).
func campaignChannel(said string) string {
	switch s := strings.ToLower(strings.Join(strings.Fields(said), " ")); {
	case s == "google ads" || s == "google":
		return businesspack.ChannelGoogleAds
	case s == "meta" || s == "facebook" || s == "instagram":
		return businesspack.ChannelMeta
	case s == "gmb" || s == "google business":
		return businesspack.ChannelGMB
	default:
		return s
	}
}

func assetType(said string) string {
	switch s := strings.ToLower(said); s {
	case "photo", "picture", "image":
		return businesspack.AssetPhoto
	case "video":
		return businesspack.AssetVideo
	case "document", "doc":
		return businesspack.AssetDocument
	}
	return businesspack.AssetOther
}
