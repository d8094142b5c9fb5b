package businesspack

import "time"

// The media tools: photos, videos and documents registered as assets, their tags, alt texts, captions and
// names, and the website packs made of them.
const (
	RegisterAsset     = "media.register_asset"
	TagAsset          = "media.tag_asset"
	GenerateAltText   = "media.generate_alt_text"
	GenerateCaption   = "media.generate_caption"
	ProposeRenameMap  = "media.propose_rename_map"
	ExportWebsitePack = "media.export_website_pack"
)

// MediaTools are the media tools, in the registry's order.
var MediaTools = []string{RegisterAsset, TagAsset, GenerateAltText, GenerateCaption, ProposeRenameMap, ExportWebsitePack}

// Asset types (media.register_asset's enum).
const (
	AssetPhoto    = "photo"
	AssetVideo    = "video"
	AssetDocument = "document"
	AssetOther    = "other"
)

// Caption platforms (media.generate_caption's enum).
const (
	PlatformWebsite = "website"
	PlatformGMB     = "gmb"
	PlatformMeta    = "meta"
	PlatformOther   = "other"
)

// MediaRegisterAssetInput is media.register_asset's input.
type MediaRegisterAssetInput struct {
	FileRef      string     `json:"file_ref"`
	AssetType    string     `json:"asset_type"`
	JobID        string     `json:"job_id,omitempty"`
	Suburb       string     `json:"suburb,omitempty"`
	TakenAt      *time.Time `json:"taken_at,omitempty"`
	Notes        string     `json:"notes,omitempty"`
	Tags         []string   `json:"tags,omitempty"`
	ContentType  string     `json:"content_type,omitempty"`
	SizeBytes    int64      `json:"size_bytes,omitempty"`
	SHA256       string     `json:"sha256,omitempty"`
	LeadID       string     `json:"lead_id,omitempty"`
	InspectionID string     `json:"inspection_id,omitempty"`
	EntityID     string     `json:"entity_id,omitempty"`
}

// MediaTagAssetInput is media.tag_asset's input. The asset is the run's context's when AssetID is empty.
type MediaTagAssetInput struct {
	AssetID string   `json:"asset_id,omitempty"`
	Tags    []string `json:"tags"`
	Remove  []string `json:"remove,omitempty"`
}

// MediaGenerateAltTextInput is media.generate_alt_text's input.
type MediaGenerateAltTextInput struct {
	AssetID string `json:"asset_id,omitempty"`
	// MaxLength is 40 to 200 characters; 0 is the tool's default.
	MaxLength int `json:"max_length,omitempty"`
}

// MediaGenerateCaptionInput is media.generate_caption's input.
type MediaGenerateCaptionInput struct {
	AssetID  string `json:"asset_id,omitempty"`
	Platform string `json:"platform,omitempty"`
}

// MediaProposeRenameMapInput is media.propose_rename_map's input.
type MediaProposeRenameMapInput struct {
	AssetIDs     []string `json:"asset_ids"`
	NamingPolicy string   `json:"naming_policy,omitempty"`
	// DryRunOnly, true by default, only proposes; false also records the names.
	DryRunOnly *bool `json:"dry_run_only,omitempty"`
}

// MediaExportWebsitePackInput is media.export_website_pack's input.
type MediaExportWebsitePackInput struct {
	AssetIDs []string `json:"asset_ids"`
	// IncludeCSV is true by default.
	IncludeCSV *bool  `json:"include_csv,omitempty"`
	Format     string `json:"format,omitempty"`
}
