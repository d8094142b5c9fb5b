package businesshandlers

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"os"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/llmtext"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerMedia(h executor.Handlers, p *pack) {
	h.Func(businesspack.RegisterAsset, executor.Typed(p.registerAsset))
	h.Func(businesspack.TagAsset, executor.Typed(tagAsset))
	h.Add(businesspack.GenerateAltText, llmHandler(p.generateAltText))
	h.Add(businesspack.GenerateCaption, llmHandler(p.generateCaption))
	h.Func(businesspack.ProposeRenameMap, executor.Typed(p.proposeRenameMap))
	h.Func(businesspack.ExportWebsitePack, executor.Typed(p.exportWebsitePack))
}

// asset is a media asset as the media tools return it.
type asset struct {
	AssetID      uuid.UUID  `json:"asset_id"`
	FileRef      string     `json:"file_ref"`
	AssetType    string     `json:"asset_type"`
	JobID        *uuid.UUID `json:"job_id"`
	Suburb       *string    `json:"suburb"`
	TakenAt      *time.Time `json:"taken_at"`
	Notes        *string    `json:"notes"`
	Tags         []string   `json:"tags"`
	AltText      *string    `json:"alt_text"`
	ProposedName *string    `json:"proposed_name"`
	ContentType  *string    `json:"content_type"`
	SizeBytes    *int64     `json:"size_bytes"`
	SHA256       *string    `json:"sha256"`
	LeadID       *uuid.UUID `json:"lead_id"`
	InspectionID *uuid.UUID `json:"inspection_id"`
	EntityID     *uuid.UUID `json:"entity_id"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

const assetColumns = `id, file_ref, kind, job_id, suburb, taken_at, notes, tags, alt_text, proposed_name, content_type, size_bytes,
	sha256, lead_id, inspection_id, entity_id, created_at, updated_at`

func scanAsset(row pgx.Row) (asset, error) {
	var a asset
	err := row.Scan(&a.AssetID, &a.FileRef, &a.AssetType, &a.JobID, &a.Suburb, &a.TakenAt, &a.Notes, &a.Tags, &a.AltText,
		&a.ProposedName, &a.ContentType, &a.SizeBytes, &a.SHA256, &a.LeadID, &a.InspectionID, &a.EntityID, &a.CreatedAt, &a.UpdatedAt)
	return a, err
}

// getAsset reads an asset, or answers not_found.
func getAsset(ctx context.Context, db executor.DB, id uuid.UUID) (asset, error) {
	a, err := scanAsset(db.QueryRow(ctx, `SELECT `+assetColumns+` FROM media_assets WHERE id = $1`, id))
	return a, executor.NotFoundIfNoRows(err, "media asset", id)
}

// getAssets reads assets in the order of ids (each once); any missing id is not_found, all of them named.
func getAssets(ctx context.Context, c *executor.Call, ids []uuid.UUID) ([]asset, error) {
	ids = uniqueIDs(ids)
	if len(ids) == 0 {
		return nil, executor.Invalid("asset_ids is empty: name at least one media asset")
	}
	found, err := executor.QueryList(ctx, c.DB, scanAsset, `SELECT `+assetColumns+` FROM media_assets WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	byID := map[uuid.UUID]asset{}
	for _, a := range found {
		byID[a.AssetID] = a
	}
	out := make([]asset, 0, len(ids))
	var missing []string
	for _, id := range ids {
		a, ok := byID[id]
		if !ok {
			missing = append(missing, id.String())
			continue
		}
		out = append(out, a)
	}
	if len(missing) > 0 {
		return nil, executor.NotFound("media asset %s does not exist", strings.Join(missing, ", "))
	}
	return out, nil
}

func uniqueIDs(ids []uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// normalizeTags lowercases and trims tags, folds inner whitespace, and drops empty and repeated ones,
// keeping their order.
func normalizeTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		t = strings.ToLower(foldSpace(t))
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

type registerAssetInput struct {
	FileRef      string     `json:"file_ref"`
	AssetType    string     `json:"asset_type"`
	JobID        *uuid.UUID `json:"job_id"`
	Suburb       *string    `json:"suburb"`
	TakenAt      *time.Time `json:"taken_at"`
	Notes        *string    `json:"notes"`
	Tags         []string   `json:"tags"`
	ContentType  *string    `json:"content_type"`
	SizeBytes    *int64     `json:"size_bytes"`
	SHA256       *string    `json:"sha256"`
	LeadID       *uuid.UUID `json:"lead_id"`
	InspectionID *uuid.UUID `json:"inspection_id"`
	EntityID     *uuid.UUID `json:"entity_id"`
}

type registerAssetOutput struct {
	AssetID uuid.UUID `json:"asset_id"`
	Created bool      `json:"created"`
	Asset   asset     `json:"asset"`
}

// registerAsset records a file by its reference. A reference is one asset: registering it again returns
// the first registration unchanged. A file in GEM's file store must be there; its size, hash and type are
// read from the store. Without a suburb, the job's (its site's, customer's or lead's) is used.
func (p *pack) registerAsset(ctx context.Context, c *executor.Call, in registerAssetInput) (*registerAssetOutput, error) {
	in.FileRef = strings.TrimSpace(in.FileRef)
	if in.FileRef == "" {
		return nil, executor.Invalid("file_ref is empty: give the file's storage key, URL or gemfs:// reference")
	}
	if isFileStoreRef(in.FileRef) {
		filePath, err := p.files.Path(in.FileRef)
		if err != nil {
			return nil, executor.NotFound("file %s is not in GEM's file store", in.FileRef)
		}
		st, err := os.Stat(filePath)
		if err != nil {
			return nil, fmt.Errorf("error reading file %s: %w", in.FileRef, err)
		}
		size, digest := st.Size(), strings.TrimSuffix(path.Base(filePath), path.Ext(filePath))
		in.SizeBytes, in.SHA256 = &size, &digest
		if in.ContentType == nil {
			if ct := mime.TypeByExtension(path.Ext(filePath)); ct != "" {
				ct, _, _ = strings.Cut(ct, ";")
				in.ContentType = &ct
			}
		}
	}
	if in.SHA256 != nil {
		lower := strings.ToLower(*in.SHA256)
		in.SHA256 = &lower
	}
	in.Suburb = trimmedText(in.Suburb)
	if in.JobID != nil {
		suburb, err := jobSuburb(ctx, c.DB, *in.JobID)
		if err != nil {
			return nil, err
		}
		if in.Suburb == nil {
			in.Suburb = suburb
		}
	}
	if in.Suburb == nil && (in.LeadID != nil || in.InspectionID != nil) {
		// The lead's suburb (directly, or through the inspection); a missing row is left to the foreign keys.
		if err := c.DB.QueryRow(ctx, `SELECT nullif(trim(suburb), '') FROM leads
			WHERE id = coalesce($1, (SELECT lead_id FROM inspections WHERE id = $2))`, in.LeadID, in.InspectionID).Scan(&in.Suburb); err != nil &&
			!errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
	}
	a, err := scanAsset(c.DB.QueryRow(ctx, `INSERT INTO media_assets (file_ref, kind, job_id, suburb, taken_at, notes, tags,
			content_type, size_bytes, sha256, lead_id, inspection_id, entity_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT ON CONSTRAINT media_assets_one_per_file_ref DO NOTHING
		RETURNING `+assetColumns, in.FileRef, in.AssetType, in.JobID, in.Suburb, in.TakenAt, trimmedText(in.Notes),
		normalizeTags(in.Tags), in.ContentType, in.SizeBytes, in.SHA256, in.LeadID, in.InspectionID, in.EntityID))
	if err == nil {
		return &registerAssetOutput{AssetID: a.AssetID, Created: true, Asset: a}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	a, err = scanAsset(c.DB.QueryRow(ctx, `SELECT `+assetColumns+` FROM media_assets WHERE file_ref = $1`, in.FileRef))
	if err != nil {
		return nil, err
	}
	return &registerAssetOutput{AssetID: a.AssetID, Asset: a}, nil
}

// jobSuburb returns the suburb of a job's site, customer or lead (nil when none has one), or not_found.
func jobSuburb(ctx context.Context, db executor.DB, jobID uuid.UUID) (*string, error) {
	var suburb *string
	err := db.QueryRow(ctx, `SELECT coalesce(nullif(trim(si.suburb), ''), nullif(trim(cu.suburb), ''), nullif(trim(l.suburb), ''))
		FROM jobs j LEFT JOIN quotes q ON q.id = j.quote_id
		LEFT JOIN inspections i ON i.id = q.inspection_id
		LEFT JOIN entities si ON si.id = i.site_id
		LEFT JOIN entities cu ON cu.id = q.customer_id
		LEFT JOIN leads l ON l.id = q.lead_id
		WHERE j.id = $1`, jobID).Scan(&suburb)
	return suburb, executor.NotFoundIfNoRows(err, "job", jobID)
}

type tagAssetOutput struct {
	AssetID uuid.UUID `json:"asset_id"`
	Tags    []string  `json:"tags"`
	Added   []string  `json:"added"`
	Removed []string  `json:"removed"`
}

// tagAsset adds tags (lowercased) and removes the tags in remove. Tags already there are not added twice,
// so repeating a call changes nothing; the result lists every tag the asset has and what changed.
func tagAsset(ctx context.Context, c *executor.Call, in businesspack.MediaTagAssetInput) (*tagAssetOutput, error) {
	assetID, err := executor.RecordID("asset_id", in.AssetID)
	if err != nil {
		return nil, err
	}
	add, remove := normalizeTags(in.Tags), normalizeTags(in.Remove)
	if len(add) == 0 && len(remove) == 0 {
		return nil, executor.Invalid("tags is empty: give at least one tag to add (or one to remove)")
	}
	var current []string
	if err := c.DB.QueryRow(ctx, `SELECT tags FROM media_assets WHERE id = $1 FOR UPDATE`, assetID).Scan(&current); err != nil {
		return nil, executor.NotFoundIfNoRows(err, "media asset", assetID)
	}
	out := tagAssetOutput{AssetID: assetID, Tags: []string{}, Added: []string{}, Removed: []string{}}
	for _, t := range current {
		if slices.Contains(remove, t) {
			out.Removed = append(out.Removed, t)
		} else {
			out.Tags = append(out.Tags, t)
		}
	}
	for _, t := range add {
		if !slices.Contains(out.Tags, t) && !slices.Contains(remove, t) {
			out.Tags = append(out.Tags, t)
			out.Added = append(out.Added, t)
		}
	}
	if len(out.Added)+len(out.Removed) > 0 {
		if _, err := c.DB.Exec(ctx, `UPDATE media_assets SET tags = $2, updated_at = now() WHERE id = $1`, assetID, out.Tags); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// assetFacts is what the records say about an asset: the asset and the job and inspection it belongs to.
type assetFacts struct {
	asset
	JobNumber    *int64
	JobStatus    *string
	Work         []string
	Defects      []string
	JobNotes     []string
	WebsiteTitle string
}

// loadAssetFacts reads an asset with the work of its job (the quote's lines, progress and completion
// notes) and the defects of its inspection (the asset's, else the job's).
func loadAssetFacts(ctx context.Context, db executor.DB, id uuid.UUID) (assetFacts, error) {
	a, err := getAsset(ctx, db, id)
	if err != nil {
		return assetFacts{}, err
	}
	f := assetFacts{asset: a}
	inspectionID := a.InspectionID
	if a.JobID != nil {
		var quoteInspection *uuid.UUID
		var completion, notes *string
		err := db.QueryRow(ctx, `SELECT j.number, j.status, j.completion_notes, j.notes, q.inspection_id
			FROM jobs j LEFT JOIN quotes q ON q.id = j.quote_id WHERE j.id = $1`, *a.JobID).
			Scan(&f.JobNumber, &f.JobStatus, &completion, &notes, &quoteInspection)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return assetFacts{}, err
		}
		if inspectionID == nil {
			inspectionID = quoteInspection
		}
		if f.Work, err = queryTexts(ctx, db, `SELECT li.description FROM jobs j JOIN quote_line_items li ON li.quote_id = j.quote_id
			WHERE j.id = $1 ORDER BY li.position LIMIT 12`, *a.JobID); err != nil {
			return assetFacts{}, err
		}
		progress, err := queryTexts(ctx, db, `SELECT summary FROM job_progress_updates WHERE job_id = $1 ORDER BY created_at DESC, id LIMIT 5`, *a.JobID)
		if err != nil {
			return assetFacts{}, err
		}
		for _, s := range append([]*string{notes, completion}, stringPtrs(progress)...) {
			if s != nil && !isBlankText(*s) {
				f.JobNotes = append(f.JobNotes, *s)
			}
		}
	}
	if inspectionID != nil {
		if f.Defects, err = defectLines(ctx, db, *inspectionID, 10); err != nil {
			return assetFacts{}, err
		}
	}
	return f, nil
}

// defectLines describes an inspection's defects, worst first: "ridge, high: cracked bedding (north side)".
func defectLines(ctx context.Context, db executor.DB, inspectionID uuid.UUID, limit int) ([]string, error) {
	return queryTexts(ctx, db, `SELECT concat_ws(': ', concat_ws(', ', category, severity),
			nullif(concat_ws(' ', notes, '(' || nullif(location, '') || ')'), ''))
		FROM inspection_defects WHERE inspection_id = $1
		ORDER BY CASE severity WHEN 'high' THEN 0 WHEN 'medium' THEN 1 WHEN 'low' THEN 2 ELSE 3 END, created_at, id
		LIMIT $2`, inspectionID, limit)
}

// queryTexts runs a query of one text column and returns its non-blank values.
func queryTexts(ctx context.Context, db executor.DB, sql string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[*string])
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, s := range list {
		if s != nil && !isBlankText(*s) {
			out = append(out, strings.TrimSpace(*s))
		}
	}
	return out, nil
}

func stringPtrs(list []string) []*string {
	out := make([]*string, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out
}

// hasContent reports whether the records say anything about the asset beyond its file.
func (f assetFacts) hasContent() bool {
	return (f.Notes != nil && !isBlankText(*f.Notes)) || len(f.Tags) > 0 || len(f.Work) > 0 || len(f.Defects) > 0 || len(f.JobNotes) > 0
}

// addTo writes the asset's facts into a prompt.
func (f assetFacts) addTo(fs *promptFacts, loc *time.Location) {
	fs.add("asset type", f.AssetType)
	fs.add("file name", path.Base(f.FileRef))
	fs.add("suburb", f.Suburb)
	if f.TakenAt != nil {
		fs.add("taken on", f.TakenAt.In(loc))
	}
	fs.add("tags", f.Tags)
	fs.add("notes", f.Notes)
	if f.JobNumber != nil {
		fs.add("job", fmt.Sprintf("%s (%s)", jobLabel(*f.JobNumber), *f.JobStatus))
	}
	fs.add("work on the job", strings.Join(f.Work, "; "))
	fs.add("defects found at inspection", strings.Join(f.Defects, "; "))
	fs.add("job notes", strings.Join(f.JobNotes, "; "))
}

// prepareAssetCopy loads what copy about one asset is written from: its facts (also as prompt facts) and the
// model. An asset the records say nothing about is refused: the model would have to invent.
func (p *pack) prepareAssetCopy(ctx context.Context, c *executor.Call, id uuid.UUID) (assetFacts, *promptFacts, llmtext.Model, error) {
	f, err := loadAssetFacts(ctx, c.DB, id)
	if err != nil {
		return f, nil, nil, err
	}
	if !f.hasContent() {
		return f, nil, nil, executor.Conflict("media asset %s has no notes, tags, job or inspection to write from: tag it or add notes first", f.AssetID)
	}
	loc, m, err := p.zoneAndModel(c.Tool.Name)
	if err != nil {
		return f, nil, nil, err
	}
	fs := &promptFacts{}
	f.addTo(fs, loc)
	return f, fs, m, nil
}

// zone is the business's time zone, or the call's not_configured error.
func (p *pack) zone() (*time.Location, error) {
	if _, err := p.today(); err != nil {
		return nil, err
	}
	return p.loc, nil
}

// Alt text bounds (the tool's max_length).
const (
	altTextDefaultLength = 125
	altTextMinLength     = 40
	altTextMaxLength     = 200
)

type generateAltTextInput struct {
	AssetID   uuid.UUID `json:"asset_id"`
	MaxLength *int      `json:"max_length"`
}

type generateAltTextOutput struct {
	AltText string    `json:"alt_text"`
	AssetID uuid.UUID `json:"asset_id"`
	writtenText
}

// writtenText is how a text written for an asset fits its limit, and who wrote it: the end of the alt
// text's and the caption's results.
type writtenText struct {
	Length    int    `json:"length"`
	MaxLength int    `json:"max_length"`
	Trimmed   bool   `json:"trimmed"`
	WrittenBy string `json:"written_by"`
}

// writeAssetText asks the model for one text of an asset, answered as {"<field>": "..."} (schema, a
// textSchema), and cleans it; an answer empty once cleaned is malformed, naming what it should have been.
func writeAssetText(ctx context.Context, m llmtext.Model, task string, fs *promptFacts, schema *llmtext.Schema, maxTokens int,
	what string, clean func(string) string) (string, error) {
	var answer map[string]string
	if err := writeCopy(ctx, m, task, fs, schema, maxTokens, &answer); err != nil {
		return "", err
	}
	raw := answer[schema.Name]
	text := clean(raw)
	if text == "" {
		return "", emptyAnswer(m, what, raw)
	}
	return text, nil
}

var altTextSchema = textSchema("alt_text")

// generateAltText asks the LLM for alt text written from the asset's records and stores it on the asset.
func (p *pack) generateAltText(ctx context.Context, c *executor.Call, in generateAltTextInput) (*generateAltTextOutput, error) {
	maxLen := altTextDefaultLength
	if in.MaxLength != nil {
		maxLen = *in.MaxLength
	}
	if maxLen < altTextMinLength || maxLen > altTextMaxLength {
		return nil, executor.Invalid("max_length %d is outside %d..%d", maxLen, altTextMinLength, altTextMaxLength)
	}
	f, fs, m, err := p.prepareAssetCopy(ctx, c, in.AssetID)
	if err != nil {
		return nil, err
	}
	task := fmt.Sprintf(`Task: write the alt text of this %s for the business's website, for people using screen readers and for
search engines. Describe what it shows, concretely, as one phrase or sentence of at most %d characters. Do not
start with "image of", "photo of" or "picture of". Mention the suburb when it is known. No marketing language.
Answer with JSON: {"alt_text": "..."}.`, f.AssetType, maxLen)
	text, err := writeAssetText(ctx, m, task, fs, altTextSchema, 300, "alt text", cleanAltText)
	if err != nil {
		return nil, err
	}
	text, trimmed := fitText(text, maxLen)
	if _, err := c.DB.Exec(ctx, `UPDATE media_assets SET alt_text = $2, updated_at = now() WHERE id = $1 AND alt_text IS DISTINCT FROM $2`,
		in.AssetID, text); err != nil {
		return nil, err
	}
	return &generateAltTextOutput{AltText: text, AssetID: in.AssetID, writtenText: writtenText{Length: runeLen(text), MaxLength: maxLen, Trimmed: trimmed,
		WrittenBy: writtenBy(m)}}, nil
}

// cleanAltText drops what screen readers already say ("Image of") and wrapping quotes.
func cleanAltText(s string) string {
	s = strings.Trim(foldSpace(s), `"'“”`)
	lower := strings.ToLower(s)
	for _, prefix := range []string{"image of ", "photo of ", "picture of ", "a photo of ", "an image of ", "a picture of "} {
		if strings.HasPrefix(lower, prefix) {
			s = strings.TrimSpace(s[len(prefix):])
			if r, size := utf8.DecodeRuneInString(s); size > 0 {
				s = string(unicode.ToUpper(r)) + s[size:]
			}
			break
		}
	}
	return s
}

// captionPlatforms are the platforms a caption is written for, with the longest caption each takes.
var captionPlatforms = map[string]struct {
	maxLength int
	guide     string
}{
	"website": {300, "a caption under the photo in a project gallery on the business's website: one or two sentences saying what was done and where"},
	"gmb":     {750, "a Google Business Profile photo or update: two to four sentences, the service and the suburb near the start, no hashtags, no phone numbers or links"},
	"meta":    {500, "a Facebook and Instagram post: a short first line that stands on its own, one to three sentences after it, and up to three relevant hashtags at the end"},
	"other":   {500, "general use (a newsletter, a brochure): two or three sentences"},
}

type generateCaptionInput struct {
	AssetID  uuid.UUID `json:"asset_id"`
	Platform *string   `json:"platform"`
}

type generateCaptionOutput struct {
	Caption  string    `json:"caption"`
	AssetID  uuid.UUID `json:"asset_id"`
	Platform string    `json:"platform"`
	writtenText
}

var captionSchema = textSchema("caption")

// generateCaption asks the LLM for a caption of the asset for a platform and stores it (one per platform).
func (p *pack) generateCaption(ctx context.Context, c *executor.Call, in generateCaptionInput) (*generateCaptionOutput, error) {
	platform := "website"
	if in.Platform != nil {
		platform = *in.Platform
	}
	spec, ok := captionPlatforms[platform]
	if !ok {
		return nil, executor.Invalid("platform %q is not website, gmb, meta or other", platform)
	}
	f, fs, m, err := p.prepareAssetCopy(ctx, c, in.AssetID)
	if err != nil {
		return nil, err
	}
	fs.add("alt text", f.AltText)
	task := fmt.Sprintf(`Task: write the caption of this %s for %s. Let the work speak: what the problem was, what was done, where.
At most %d characters. Answer with JSON: {"caption": "..."}.`, f.AssetType, spec.guide, spec.maxLength)
	text, err := writeAssetText(ctx, m, task, fs, captionSchema, 600, "caption", func(s string) string {
		return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), `"“”`))
	})
	if err != nil {
		return nil, err
	}
	text, trimmed := fitProse(text, spec.maxLength)
	by := writtenBy(m)
	if _, err := c.DB.Exec(ctx, `INSERT INTO media_asset_captions (asset_id, platform, caption, written_by) VALUES ($1, $2, $3, $4)
		ON CONFLICT ON CONSTRAINT media_asset_captions_once DO UPDATE SET caption = EXCLUDED.caption, written_by = EXCLUDED.written_by,
			updated_at = now()
		WHERE (media_asset_captions.caption, media_asset_captions.written_by) IS DISTINCT FROM (EXCLUDED.caption, EXCLUDED.written_by)`,
		in.AssetID, platform, text, by); err != nil {
		return nil, err
	}
	return &generateCaptionOutput{Caption: text, AssetID: in.AssetID, Platform: platform, writtenText: writtenText{Length: runeLen(text),
		MaxLength: spec.maxLength, Trimmed: trimmed, WrittenBy: by}}, nil
}

// fitProse shortens prose to at most max characters, at the end of a sentence when one ends in the second
// half of the allowance, else at a word boundary; it reports whether it cut.
func fitProse(s string, max int) (string, bool) {
	cut, trimmed := fitText(s, max)
	if !trimmed {
		return cut, false
	}
	if i := strings.LastIndexAny(cut, ".!?"); i >= 0 && runeLen(cut[:i+1]) > max/2 {
		return cut[:i+1], true
	}
	return cut, true
}
