package businesshandlers

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/text/unicode/norm"
)

// Naming policies of media.propose_rename_map. Every name ends with a two-digit number that keeps names
// unique (01, 02, ... among assets that would otherwise share a name) and the file's extension.
const (
	// namingSEO: suburb, subject (the asset's tags, else its type), stage (before, during, after), date:
	// newtown-ridge-repair-after-2026-11-24-01.jpg.
	namingSEO = "seo"
	// namingJob: the job first, for folders sorted by job: job-0042-newtown-ridge-repair-2026-11-24-01.jpg.
	namingJob = "job"
	// namingDate: the date first, for folders sorted by date: 2026-11-24-newtown-ridge-repair-01.jpg.
	namingDate = "date"
)

var namingPolicies = []string{namingSEO, namingJob, namingDate}

// stageTags are the tags that say when a photo was taken in the work; they go after the subject.
var stageTags = []string{"before", "during", "progress", "after"}

// Bounds of a proposed name.
const (
	maxSubjectTags = 3
	maxStemLength  = 70
)

// slugify turns text into lowercase ASCII words joined by hyphens: "Ridge Repair (Café)" → "ridge-repair-cafe".
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFD.String(strings.ToLower(s)) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// an accent, separated from its letter by NFD
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
	}
	return b.String()
}

// fileExtRe is an extension worth keeping.
var fileExtRe = regexp.MustCompile(`^\.[a-z0-9]{1,5}$`)

// commonExts are the extensions of common media types (mime's tables offer several for some).
var commonExts = map[string]string{
	"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp", "image/gif": ".gif", "image/heic": ".heic",
	"video/mp4": ".mp4", "video/quicktime": ".mov", "application/pdf": ".pdf",
}

// baseName is the last path segment of a file reference (a URL's without its query), and its extension.
func baseName(ref string) (name, ext string) {
	p := ref
	if u, err := url.Parse(ref); err == nil && u.Scheme != "" && u.Path != "" {
		p = u.Path
	}
	name = path.Base(strings.TrimRight(p, "/"))
	if name == "." || name == "/" {
		name = ref
	}
	ext = strings.ToLower(path.Ext(name))
	if !fileExtRe.MatchString(ext) {
		ext = ""
	}
	if ext == ".jpeg" {
		ext = ".jpg"
	}
	return name, ext
}

// fileExt is the extension a proposed name keeps: the reference's, else one for the content type.
func (a asset) fileExt() string {
	if _, ext := baseName(a.FileRef); ext != "" {
		return ext
	}
	if a.ContentType != nil {
		if ext, ok := commonExts[*a.ContentType]; ok {
			return ext
		}
		if exts, _ := mime.ExtensionsByType(*a.ContentType); len(exts) > 0 {
			return exts[0]
		}
	}
	return ""
}

// day is the date the asset is filed under: when it was taken, else when it was registered.
func (a asset) day(loc *time.Location) time.Time {
	if a.TakenAt != nil {
		return a.TakenAt.In(loc)
	}
	return a.CreatedAt.In(loc)
}

// nameStem is an asset's name under a policy, before its number and extension.
func (a asset) nameStem(policy string, loc *time.Location, jobNumber *int64) string {
	suburb := ""
	if a.Suburb != nil {
		suburb = slugify(*a.Suburb)
	}
	var subject []string
	stage := ""
	for _, t := range a.Tags {
		s := slugify(t)
		switch {
		case s == "" || s == suburb || slices.Contains(subject, s):
		case slices.Contains(stageTags, s):
			if stage == "" {
				stage = s
			}
		case len(subject) < maxSubjectTags:
			subject = append(subject, s)
		}
	}
	if len(subject) == 0 {
		subject = []string{a.AssetType}
	}
	// Keep the stem short: drop subject words from the end until it fits.
	what := strings.Join(subject, "-")
	date := a.day(loc).Format(time.DateOnly)
	var parts []string
	join := func() string {
		parts = parts[:0]
		if policy == namingJob && jobNumber != nil {
			parts = append(parts, fmt.Sprintf("job-%04d", *jobNumber))
		}
		if policy == namingDate {
			parts = append(parts, date)
		}
		parts = append(parts, suburb, what, stage)
		if policy != namingDate {
			parts = append(parts, date)
		}
		return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "-")
	}
	stem := join()
	for len(stem) > maxStemLength && strings.Contains(what, "-") {
		what = what[:strings.LastIndexByte(what, '-')]
		stem = join()
	}
	return stem
}

// planNames proposes a name for each asset under a policy. Names are unique: assets sharing a stem are
// numbered in the order they were taken, skipping numbers that other assets' recorded names hold. With
// keepRecorded, assets that have a recorded name keep it (and it counts as held).
func (p *pack) planNames(ctx context.Context, c *executor.Call, assets []asset, policy string, keepRecorded bool) (map[uuid.UUID]string, error) {
	loc, err := p.zone()
	if err != nil {
		return nil, err
	}
	jobNumbers := map[uuid.UUID]int64{}
	if policy == namingJob {
		var jobIDs []uuid.UUID
		for _, a := range assets {
			if a.JobID != nil {
				jobIDs = append(jobIDs, *a.JobID)
			}
		}
		rows, err := c.DB.Query(ctx, `SELECT id, number FROM jobs WHERE id = ANY($1)`, jobIDs)
		if err != nil {
			return nil, err
		}
		var id uuid.UUID
		var number int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &number}, func() error { jobNumbers[id] = number; return nil }); err != nil {
			return nil, err
		}
	}
	names := map[uuid.UUID]string{}
	var toName []asset
	for _, a := range assets {
		if keepRecorded && a.ProposedName != nil {
			names[a.AssetID] = *a.ProposedName
		} else {
			toName = append(toName, a)
		}
	}
	naming := make([]uuid.UUID, len(toName))
	stems := map[string][]asset{}
	for i, a := range toName {
		naming[i] = a.AssetID
		var number *int64
		if a.JobID != nil {
			if n, ok := jobNumbers[*a.JobID]; ok {
				number = &n
			}
		}
		stem := a.nameStem(policy, loc, number)
		stems[stem] = append(stems[stem], a)
	}
	for stem, group := range stems {
		held, err := queryTexts(ctx, c.DB, `SELECT proposed_name FROM media_assets WHERE proposed_name LIKE $1 AND NOT (id = ANY($2))`,
			executor.LikeEscape(stem)+"-%", naming)
		if err != nil {
			return nil, err
		}
		taken := map[int]bool{}
		for _, name := range held {
			if n, ok := nameNumber(stem, name); ok {
				taken[n] = true
			}
		}
		sort.SliceStable(group, func(i, j int) bool {
			a, b := group[i], group[j]
			if !a.day(time.UTC).Equal(b.day(time.UTC)) {
				return a.day(time.UTC).Before(b.day(time.UTC))
			}
			if a.FileRef != b.FileRef {
				return a.FileRef < b.FileRef
			}
			return a.AssetID.String() < b.AssetID.String()
		})
		n := 0
		for _, a := range group {
			for n++; taken[n]; n++ {
			}
			names[a.AssetID] = fmt.Sprintf("%s-%02d%s", stem, n, a.fileExt())
		}
	}
	return names, nil
}

// nameNumber reads the number of a name made from stem ("stem-07.jpg" → 7).
func nameNumber(stem, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, stem+"-")
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(digits)
	return n, err == nil && n > 0
}

type proposeRenameMapInput struct {
	AssetIDs     []uuid.UUID `json:"asset_ids"`
	NamingPolicy *string     `json:"naming_policy"`
	DryRunOnly   *bool       `json:"dry_run_only"`
}

type renameEntry struct {
	AssetID      uuid.UUID `json:"asset_id"`
	FileRef      string    `json:"file_ref"`
	CurrentName  string    `json:"current_name"`
	ProposedName string    `json:"proposed_name"`
	// Changed: the proposed name differs from the file's current name.
	Changed bool `json:"changed"`
	// Recorded: this call wrote the name on the asset (not a dry run, and the asset had another name).
	Recorded bool `json:"recorded"`
}

type proposeRenameMapOutput struct {
	RenameMap    []renameEntry `json:"rename_map"`
	NamingPolicy string        `json:"naming_policy"`
	DryRunOnly   bool          `json:"dry_run_only"`
	Recorded     int           `json:"recorded"`
}

// proposeRenameMap proposes SEO-friendly file names for assets (see the naming policies). It renames no
// file: a dry run (the default) only answers; otherwise the names are recorded on the assets
// (proposed_name), where export_website_pack uses them.
func (p *pack) proposeRenameMap(ctx context.Context, c *executor.Call, in proposeRenameMapInput) (*proposeRenameMapOutput, error) {
	policy := namingSEO
	if in.NamingPolicy != nil && !isBlankText(*in.NamingPolicy) {
		policy = strings.ToLower(strings.TrimSpace(*in.NamingPolicy))
	}
	if !slices.Contains(namingPolicies, policy) {
		return nil, executor.Invalid("naming_policy %q is not one of %s", policy, strings.Join(namingPolicies, ", "))
	}
	dryRun := in.DryRunOnly == nil || *in.DryRunOnly
	assets, err := getAssets(ctx, c, in.AssetIDs)
	if err != nil {
		return nil, err
	}
	names, err := p.planNames(ctx, c, assets, policy, false)
	if err != nil {
		return nil, err
	}
	out := proposeRenameMapOutput{RenameMap: []renameEntry{}, NamingPolicy: policy, DryRunOnly: dryRun}
	var changing []uuid.UUID
	for _, a := range assets {
		current, _ := baseName(a.FileRef)
		e := renameEntry{AssetID: a.AssetID, FileRef: a.FileRef, CurrentName: current, ProposedName: names[a.AssetID]}
		e.Changed = e.ProposedName != current
		e.Recorded = !dryRun && (a.ProposedName == nil || *a.ProposedName != e.ProposedName)
		if e.Recorded {
			changing = append(changing, a.AssetID)
			out.Recorded++
		}
		out.RenameMap = append(out.RenameMap, e)
	}
	if len(changing) > 0 {
		// Names may move between the assets of this call: clear them first, so no two assets hold one
		// name at any moment (the unique index checks each row).
		if _, err := c.DB.Exec(ctx, `UPDATE media_assets SET proposed_name = NULL WHERE id = ANY($1) AND proposed_name IS NOT NULL
			AND proposed_name = ANY($2)`, changing, slices.Collect(maps.Values(names))); err != nil {
			return nil, err
		}
		for _, e := range out.RenameMap {
			if e.Recorded {
				if _, err := c.DB.Exec(ctx, `UPDATE media_assets SET proposed_name = $2, updated_at = now() WHERE id = $1`,
					e.AssetID, e.ProposedName); err != nil {
					return nil, err
				}
			}
		}
	}
	return &out, nil
}

type exportWebsitePackInput struct {
	AssetIDs   []uuid.UUID `json:"asset_ids"`
	IncludeCSV *bool       `json:"include_csv"`
	Format     *string     `json:"format"`
}

type exportWebsitePackOutput struct {
	PackRef        string      `json:"pack_ref"`
	FileName       string      `json:"file_name"`
	Bytes          int64       `json:"bytes"`
	SHA256         string      `json:"sha256"`
	AssetCount     int         `json:"asset_count"`
	FilesIncluded  int         `json:"files_included"`
	ListedOnly     int         `json:"listed_only"`
	CSVIncluded    bool        `json:"csv_included"`
	Entries        []string    `json:"entries"`
	MissingAltText []uuid.UUID `json:"missing_alt_text"`
}

// Names inside a website pack.
const (
	packManifestName = "manifest.json"
	packCSVName      = "alt-text-and-captions.csv"
	packFilesDir     = "files/"
	packFileName     = "website-pack.zip"
)

// packAsset is one asset in a pack's manifest.
type packAsset struct {
	AssetID  uuid.UUID `json:"asset_id"`
	FileName string    `json:"file_name"`
	// PathInPack is where the file is in the zip, or null for a file that is not in GEM's file store.
	PathInPack *string            `json:"path_in_pack"`
	SourceRef  string             `json:"source_ref"`
	AssetType  string             `json:"asset_type"`
	AltText    *string            `json:"alt_text"`
	Captions   map[string]string  `json:"captions"`
	Tags       []string           `json:"tags"`
	Suburb     *string            `json:"suburb"`
	TakenOn    *businesspack.Date `json:"taken_on"`
}

// packCSVHeader is the CSV's header row.
var packCSVHeader = []string{"file_name", "path_in_pack", "alt_text", "website_caption", "gmb_caption", "meta_caption", "other_caption",
	"tags", "suburb", "taken_on", "asset_type", "asset_id", "source_ref"}

// exportWebsitePack makes a zip of assets for a website: the files kept in GEM's file store (under their
// proposed names), a manifest and, unless include_csv is false, a CSV of file names, alt texts and
// captions. Files elsewhere (URLs, other storage) are listed but not copied. The zip is the same bytes for
// the same records, so a retried call stores the same file.
func (p *pack) exportWebsitePack(ctx context.Context, c *executor.Call, in exportWebsitePackInput) (*exportWebsitePackOutput, error) {
	if in.Format != nil && *in.Format != "zip" {
		return nil, executor.Invalid("format %q is not zip", *in.Format)
	}
	includeCSV := in.IncludeCSV == nil || *in.IncludeCSV
	assets, err := getAssets(ctx, c, in.AssetIDs)
	if err != nil {
		return nil, err
	}
	loc, err := p.zone()
	if err != nil {
		return nil, err
	}
	names, err := p.planNames(ctx, c, assets, namingSEO, true)
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(assets))
	for i, a := range assets {
		ids[i] = a.AssetID
	}
	captions := map[uuid.UUID]map[string]string{}
	rows, err := c.DB.Query(ctx, `SELECT asset_id, platform, caption FROM media_asset_captions WHERE asset_id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	var id uuid.UUID
	var platform, caption string
	if _, err := pgx.ForEachRow(rows, []any{&id, &platform, &caption}, func() error {
		if captions[id] == nil {
			captions[id] = map[string]string{}
		}
		captions[id][platform] = caption
		return nil
	}); err != nil {
		return nil, err
	}

	// Every entry carries the time of the newest record, never the clock: same records, same bytes.
	modified := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, a := range assets {
		if a.UpdatedAt.After(modified) {
			modified = a.UpdatedAt.UTC().Truncate(time.Second)
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	out := exportWebsitePackOutput{AssetCount: len(assets), CSVIncluded: includeCSV, Entries: []string{}, MissingAltText: []uuid.UUID{}}
	add := func(name string, method uint16, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: modified})
		if err != nil {
			return fmt.Errorf("error adding %s to the pack: %w", name, err)
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("error adding %s to the pack: %w", name, err)
		}
		out.Entries = append(out.Entries, name)
		return nil
	}
	manifest := struct {
		Generator string      `json:"generator"`
		Assets    []packAsset `json:"assets"`
	}{Generator: "GEM media.export_website_pack", Assets: []packAsset{}}
	for _, a := range assets {
		pa := packAsset{AssetID: a.AssetID, FileName: names[a.AssetID], SourceRef: a.FileRef, AssetType: a.AssetType, AltText: a.AltText,
			Captions: captions[a.AssetID], Tags: a.Tags, Suburb: a.Suburb}
		if pa.Captions == nil {
			pa.Captions = map[string]string{}
		}
		if a.TakenAt != nil {
			d := businesspack.DateOf(a.TakenAt.In(loc))
			pa.TakenOn = &d
		}
		if a.AltText == nil {
			out.MissingAltText = append(out.MissingAltText, a.AssetID)
		}
		if isFileStoreRef(a.FileRef) {
			data, err := p.files.Read(a.FileRef)
			if err != nil {
				return nil, executor.NotFound("the file of media asset %s (%s) is not in GEM's file store", a.AssetID, a.FileRef)
			}
			inPack := packFilesDir + pa.FileName
			// Photos and videos are compressed already; storing them as they are is as small and faster.
			method := zip.Deflate
			if a.AssetType == "photo" || a.AssetType == "video" {
				method = zip.Store
			}
			if err := add(inPack, method, data); err != nil {
				return nil, err
			}
			pa.PathInPack = &inPack
			out.FilesIncluded++
		} else {
			out.ListedOnly++
		}
		manifest.Assets = append(manifest.Assets, pa)
	}
	data, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("error encoding the manifest: %w", err)
	}
	if err := add(packManifestName, zip.Deflate, append(data, '\n')); err != nil {
		return nil, err
	}
	if includeCSV {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		records := [][]string{packCSVHeader}
		for _, pa := range manifest.Assets {
			records = append(records, []string{pa.FileName, textOrEmpty(pa.PathInPack), textOrEmpty(pa.AltText), pa.Captions["website"], pa.Captions["gmb"],
				pa.Captions["meta"], pa.Captions["other"], strings.Join(pa.Tags, ", "), textOrEmpty(pa.Suburb), dateOrEmpty(pa.TakenOn), pa.AssetType,
				pa.AssetID.String(), pa.SourceRef})
		}
		if err := w.WriteAll(records); err != nil {
			return nil, fmt.Errorf("error writing the CSV: %w", err)
		}
		if err := add(packCSVName, zip.Deflate, b.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("error finishing the pack: %w", err)
	}
	f, err := p.files.Put(packFileName, ".zip", "application/zip", buf.Bytes())
	if err != nil {
		return nil, err
	}
	c.RecordFile(f)
	out.PackRef, out.FileName, out.Bytes, out.SHA256 = f.Ref, f.Name, f.Bytes, f.SHA256
	return &out, nil
}
