package business

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerMedia(h executor.Handlers) {
	h.Func("media.register_asset", executor.Typed(registerAsset))
	h.Func("media.tag_asset", executor.Typed(tagAsset))
}

type asset struct {
	AssetID uuid.UUID `json:"asset_id"`
	// The fields media.register_asset takes, encoded inline.
	registerAssetInput
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const assetColumns = `id, file_ref, kind, content_type, size_bytes, sha256, caption, tags, lead_id, inspection_id, entity_id,
	taken_at, created_at, updated_at`

func scanAsset(row pgx.Row) (asset, error) {
	var a asset
	err := row.Scan(&a.AssetID, &a.FileRef, &a.Kind, &a.ContentType, &a.SizeBytes, &a.SHA256, &a.Caption, &a.Tags,
		&a.LeadID, &a.InspectionID, &a.EntityID, &a.TakenAt, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// normalizeTags lowercases and trims tags and drops empty and repeated ones, keeping their order.
func normalizeTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

type assetRegistered struct {
	Asset   asset `json:"asset"`
	Created bool  `json:"created"`
}

type registerAssetInput struct {
	FileRef      string     `json:"file_ref"`
	Kind         string     `json:"kind"`
	ContentType  *string    `json:"content_type"`
	SizeBytes    *int64     `json:"size_bytes"`
	SHA256       *string    `json:"sha256"`
	Caption      *string    `json:"caption"`
	Tags         []string   `json:"tags"`
	LeadID       *uuid.UUID `json:"lead_id"`
	InspectionID *uuid.UUID `json:"inspection_id"`
	EntityID     *uuid.UUID `json:"entity_id"`
	TakenAt      *time.Time `json:"taken_at"`
}

// registerAsset records a file (photo, video, document) by its reference. A reference is one asset:
// registering it again returns the first registration unchanged.
func registerAsset(ctx context.Context, c *executor.Call, in registerAssetInput) (*assetRegistered, error) {
	if in.Kind == "" {
		in.Kind = "photo"
	}
	if in.SHA256 != nil {
		lower := strings.ToLower(*in.SHA256)
		in.SHA256 = &lower
	}
	a, err := scanAsset(c.DB.QueryRow(ctx, `INSERT INTO media_assets (file_ref, kind, content_type, size_bytes, sha256, caption, tags,
			lead_id, inspection_id, entity_id, taken_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT ON CONSTRAINT media_assets_one_per_file_ref DO NOTHING
		RETURNING `+assetColumns, in.FileRef, in.Kind, in.ContentType, in.SizeBytes, in.SHA256, in.Caption, normalizeTags(in.Tags),
		in.LeadID, in.InspectionID, in.EntityID, in.TakenAt))
	if err == nil {
		return &assetRegistered{Asset: a, Created: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	a, err = scanAsset(c.DB.QueryRow(ctx, `SELECT `+assetColumns+` FROM media_assets WHERE file_ref = $1`, in.FileRef))
	if err != nil {
		return nil, err
	}
	return &assetRegistered{Asset: a}, nil
}

type tagAssetOutput struct {
	Asset   asset    `json:"asset"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

type tagAssetInput struct {
	AssetID uuid.UUID `json:"asset_id"`
	Add     []string  `json:"add"`
	Remove  []string  `json:"remove"`
}

// tagAsset adds and removes tags (lowercased). Tags already there are not added twice; the result says
// which tags actually changed.
func tagAsset(ctx context.Context, c *executor.Call, in tagAssetInput) (*tagAssetOutput, error) {
	a, err := scanAsset(c.DB.QueryRow(ctx, `SELECT `+assetColumns+` FROM media_assets WHERE id = $1 FOR UPDATE`, in.AssetID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "media asset", in.AssetID)
	}
	remove := normalizeTags(in.Remove)
	added, removed := []string{}, []string{}
	tags := []string{}
	for _, t := range a.Tags {
		if slices.Contains(remove, t) {
			removed = append(removed, t)
		} else {
			tags = append(tags, t)
		}
	}
	for _, t := range normalizeTags(in.Add) {
		if !slices.Contains(tags, t) && !slices.Contains(remove, t) {
			tags = append(tags, t)
			added = append(added, t)
		}
	}
	if len(added) > 0 || len(removed) > 0 {
		a, err = scanAsset(c.DB.QueryRow(ctx, `UPDATE media_assets SET tags = $2, updated_at = now() WHERE id = $1 RETURNING `+assetColumns,
			in.AssetID, tags))
		if err != nil {
			return nil, err
		}
	}
	return &tagAssetOutput{Asset: a, Added: added, Removed: removed}, nil
}
