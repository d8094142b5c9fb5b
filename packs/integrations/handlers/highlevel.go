package integrationshandlers

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/registry/phone"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// highLevelNotConfigured says why HighLevel cannot be called, or is nil: no token or location, or a base
// URL no request can reach.
func (p *pack) highLevelNotConfigured() error {
	if !p.highLevel.configured() {
		return highLevelUnset()
	}
	return urlNotConfigured(integrationspack.EnvHighLevelBaseURL, p.cfg.HighLevel.BaseURL)
}

func highLevelUnset() error {
	return executor.NotConfigured("HighLevel is not configured: the API token and location id are not set", highLevelRequiredEnv,
		"Create a Private Integration in the HighLevel sub-account (Settings → Private Integrations) with the scopes locations.readonly, "+
			"contacts.readonly, contacts.write, opportunities.readonly and opportunities.write, and set "+integrationspack.EnvHighLevelToken+" to its token.",
		"Set "+integrationspack.EnvHighLevelLocationID+" to the sub-account's location id (Settings → Business Profile).",
		"To move opportunities, also set "+integrationspack.EnvHighLevelPipelineID+" and "+integrationspack.EnvHighLevelStageIDs+" (for example new=<stage id>,quoted=<stage id>).")
}

// --- integrations.highlevel.health_check ---

type hlHealthChecks struct {
	API       bool  `json:"api"`
	Location  bool  `json:"location"`
	Pipeline  *bool `json:"pipeline,omitempty"`
	SyncQueue bool  `json:"sync_queue"`
}

type hlQueueCounts struct {
	Pending int `json:"pending"`
	Overdue int `json:"overdue"`
	Failed  int `json:"failed"`
}

type hlHealthOutput struct {
	Status       string         `json:"status"`
	LocationID   string         `json:"location_id"`
	LocationName string         `json:"location_name,omitempty"`
	Checks       hlHealthChecks `json:"checks"`
	Queue        hlQueueCounts  `json:"queue"`
	Detail       string         `json:"detail"`
	LatencyMS    int64          `json:"latency_ms"`
	CheckedAt    time.Time      `json:"checked_at"`
}

// highLevelHealth reads the location (GET /locations/{id}), checks that the configured pipeline and stages
// exist (GET /opportunities/pipelines) and looks at the sync queue: down when the API refuses or does not
// answer, degraded when the pipeline setup is wrong or queued operations have failed or fallen behind.
func (p *pack) highLevelHealth(ctx context.Context, c *executor.Call, _ healthInput) (*hlHealthOutput, error) {
	if err := p.highLevelNotConfigured(); err != nil {
		return nil, err
	}
	cfg := p.cfg.HighLevel
	out := &hlHealthOutput{Status: statusOK, LocationID: cfg.LocationID, CheckedAt: time.Now().UTC()}
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'pending'),
			count(*) FILTER (WHERE status = 'pending' AND next_attempt_at < now() - interval '1 hour'),
			count(*) FILTER (WHERE status = 'failed')
		FROM integration_sync_queue WHERE provider = 'highlevel'`).Scan(&out.Queue.Pending, &out.Queue.Overdue, &out.Queue.Failed); err != nil {
		return nil, fmt.Errorf("error reading the sync queue: %w", err)
	}
	out.Checks.SyncQueue = out.Queue.Failed == 0 && out.Queue.Overdue == 0
	var problems []string
	start := time.Now()
	loc, err := p.highLevel.getLocation(ctx)
	out.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		pe, ok := asProviderError(err)
		if !ok {
			return nil, err
		}
		out.Status = statusDown
		switch {
		case pe.refusedCredentials():
			out.Detail = pe.Error() + "; check " + integrationspack.EnvHighLevelToken + ", its scopes and its access to location " + cfg.LocationID
		case pe.Status == http.StatusTooManyRequests:
			out.Status, out.Checks.API, out.Detail = statusDegraded, true, pe.Error()+"; HighLevel is limiting requests"
		case pe.Status/100 == 4:
			out.Checks.API, out.Detail = true, pe.Error()+"; check "+integrationspack.EnvHighLevelLocationID
		default:
			out.Detail = pe.Error()
		}
		return out, nil
	}
	out.Checks.API, out.Checks.Location, out.LocationName = true, true, loc.Name
	if cfg.PipelineID != "" {
		ok, problem, err := p.checkPipeline(ctx)
		if err != nil {
			return nil, err
		}
		out.Checks.Pipeline = &ok
		if !ok {
			problems = append(problems, problem)
		}
	}
	if out.Queue.Failed > 0 {
		problems = append(problems, fmt.Sprintf("%d queued operations failed for good (see integration_sync_queue)", out.Queue.Failed))
	}
	if out.Queue.Overdue > 0 {
		problems = append(problems, fmt.Sprintf("%d queued operations are over an hour overdue: run integrations.highlevel.process_sync_queue", out.Queue.Overdue))
	}
	if len(problems) > 0 {
		out.Status, out.Detail = statusDegraded, strings.Join(problems, "; ")
		return out, nil
	}
	out.Detail = fmt.Sprintf("HighLevel answered for location %s (%s)", cfg.LocationID, loc.Name)
	return out, nil
}

// checkPipeline reports whether the configured pipeline exists and has every configured stage.
func (p *pack) checkPipeline(ctx context.Context) (ok bool, problem string, err error) {
	cfg := p.cfg.HighLevel
	var resp struct {
		Pipelines []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Stages []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"stages"`
		} `json:"pipelines"`
	}
	err = p.highLevel.call(ctx, http.MethodGet, "/opportunities/pipelines?"+url.Values{"locationId": {cfg.LocationID}}.Encode(), nil, &resp)
	if pe, isPE := asProviderError(err); isPE {
		return false, "the pipelines could not be read: " + pe.Error(), nil
	}
	if err != nil {
		return false, "", err
	}
	for _, pl := range resp.Pipelines {
		if pl.ID != cfg.PipelineID {
			continue
		}
		stages := map[string]bool{}
		for _, s := range pl.Stages {
			stages[s.ID] = true
		}
		var missing []string
		for _, stage := range integrationspack.GEMStages {
			if id, mapped := cfg.StageIDs[stage]; mapped && !stages[id] {
				missing = append(missing, stage+"="+id)
			}
		}
		if len(missing) > 0 {
			return false, fmt.Sprintf("pipeline %q has no stages %s (%s)", pl.Name, strings.Join(missing, ", "), integrationspack.EnvHighLevelStageIDs), nil
		}
		return true, "", nil
	}
	return false, fmt.Sprintf("the location has no pipeline %s (%s)", cfg.PipelineID, integrationspack.EnvHighLevelPipelineID), nil
}

// --- integrations.highlevel.sync_contacts ---

type syncContactsInput struct {
	LocationID string     `json:"location_id"`
	Cursor     *string    `json:"cursor"`
	Since      *time.Time `json:"since"`
	Limit      int        `json:"limit"`
	DryRun     bool       `json:"dry_run"`
}

type syncCounts struct {
	Fetched   int `json:"fetched"`
	Upserted  int `json:"upserted"`
	Unchanged int `json:"unchanged"`
	Errors    int `json:"errors"`
}

type contactProblem struct {
	ContactID string `json:"contact_id"`
	Reason    string `json:"reason"`
}

type syncContactsOutput struct {
	Status     string           `json:"status"`
	LocationID string           `json:"location_id"`
	Counts     syncCounts       `json:"counts"`
	Cursor     *string          `json:"cursor"`
	NextCursor *string          `json:"next_cursor"`
	LastSyncAt time.Time        `json:"last_sync_at"`
	Since      *time.Time       `json:"since"`
	Total      int              `json:"total"`
	DryRun     bool             `json:"dry_run"`
	Problems   []contactProblem `json:"problems"`
	Error      string           `json:"error,omitempty"`
}

// contactCursor is where a sync goes on: the next page of the same listing (the same since).
type contactCursor struct {
	Page  int        `json:"p"`
	Since *time.Time `json:"s,omitempty"`
}

func (cc contactCursor) encode() string {
	b, _ := json.Marshal(cc)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContactCursor(s string) (contactCursor, error) {
	var cc contactCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &cc) != nil || cc.Page < 1 {
		return cc, executor.Invalid("cursor %q is not a cursor this tool returned (next_cursor)", s)
	}
	return cc, nil
}

// syncContacts reads one page of the location's contacts (POST /contacts/search, least recently updated
// first) and keeps them as GEM leads, each tied to its contact by leads.highlevel_contact_id. A contact
// not yet tied is matched to a lead by phone number, or becomes a new lead. Without a cursor or since, only
// contacts updated since the last complete sync of the location are read.
func (p *pack) syncContacts(ctx context.Context, c *executor.Call, in syncContactsInput) (*syncContactsOutput, error) {
	if err := p.highLevelNotConfigured(); err != nil {
		return nil, err
	}
	if p.phoneRegionProblem != nil {
		return nil, executor.NotConfigured(p.phoneRegionProblem.Error(), []string{phone.EnvRegion},
			"Set "+phone.EnvRegion+" to a two-letter region such as AU (or unset it for AU), and restart the executor.")
	}
	location := cmp.Or(strings.TrimSpace(in.LocationID), p.cfg.HighLevel.LocationID)
	limit := in.Limit
	if limit <= 0 {
		limit = 100
	}
	now := time.Now().UTC()
	out := &syncContactsOutput{Status: "ok", LocationID: location, LastSyncAt: now, DryRun: in.DryRun, Problems: []contactProblem{}}
	cur := contactCursor{Page: 1, Since: in.Since}
	if in.Cursor != nil && *in.Cursor != "" {
		var err error
		if cur, err = decodeContactCursor(*in.Cursor); err != nil {
			return nil, err
		}
		if in.Since != nil && (cur.Since == nil || !cur.Since.Equal(*in.Since)) {
			return nil, executor.Invalid("since differs from the since the cursor was made with: give the cursor alone to go on")
		}
		out.Cursor = in.Cursor
	} else if in.Since == nil {
		var last *time.Time
		err := c.DB.QueryRow(ctx, `SELECT last_completed_at FROM integration_sync_state WHERE provider = 'highlevel' AND scope = $1`,
			location).Scan(&last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("error reading the last sync: %w", err)
		}
		cur.Since = last
	}
	out.Since = cur.Since
	search := hlContactSearch{LocationID: location, Page: cur.Page, PageLimit: limit,
		Sort: []map[string]any{{"field": "dateUpdated", "direction": "asc"}}}
	if cur.Since != nil {
		search.Filters = []map[string]any{{"field": "dateUpdated", "operator": "range",
			"value": map[string]string{"gte": cur.Since.UTC().Format(time.RFC3339Nano)}}}
	}
	contacts, total, err := p.highLevel.searchContacts(ctx, search)
	if err != nil {
		pe, ok := asProviderError(err)
		switch {
		case !ok:
			return nil, err
		case pe.retryable():
			return nil, executor.Retryable(pe)
		case pe.refusedCredentials():
			return nil, executor.NotConfigured("HighLevel refused the token: "+pe.Error(), highLevelRequiredEnv,
				"Check "+integrationspack.EnvHighLevelToken+" and that it has the contacts.readonly scope for location "+location+".")
		}
		out.Status, out.Error = "failed", pe.Error()
		return out, nil
	}
	out.Total = total
	out.Counts.Fetched = len(contacts)
	for _, ct := range contacts {
		changed, err := p.upsertContact(ctx, c, ct, in.DryRun)
		var problem *contactError
		switch {
		case errors.As(err, &problem):
			out.Counts.Errors++
			out.Problems = append(out.Problems, contactProblem{ContactID: ct.ID, Reason: problem.reason})
		case err != nil:
			return nil, err
		case changed:
			out.Counts.Upserted++
		default:
			out.Counts.Unchanged++
		}
	}
	if cur.Page*limit < total && len(contacts) > 0 {
		next := contactCursor{Page: cur.Page + 1, Since: cur.Since}.encode()
		out.NextCursor = &next
	}
	if out.Counts.Errors > 0 {
		out.Status = "partial"
		if out.Counts.Upserted+out.Counts.Unchanged == 0 {
			out.Status = "failed"
		}
	}
	if !in.DryRun {
		if err := p.recordSyncState(ctx, c, location, cur, out, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// recordSyncState remembers where the location's sync is: when a listing from the first page started, and,
// once its last page is read, that time as the since of the next sync.
func (p *pack) recordSyncState(ctx context.Context, c *executor.Call, location string, cur contactCursor, out *syncContactsOutput, now time.Time) error {
	var started *time.Time
	if cur.Page == 1 {
		started = &now
	}
	_, err := c.DB.Exec(ctx, `INSERT INTO integration_sync_state AS s (provider, scope, cursor, series_started_at, last_run_at, last_completed_at)
		VALUES ('highlevel', $1, $2, $3::timestamptz, $4::timestamptz, CASE WHEN $2::text IS NULL THEN coalesce($3, $4) END)
		ON CONFLICT (provider, scope) DO UPDATE SET
			cursor = EXCLUDED.cursor,
			series_started_at = coalesce($3, s.series_started_at),
			last_run_at = EXCLUDED.last_run_at,
			last_completed_at = CASE WHEN $2::text IS NULL THEN coalesce($3, s.series_started_at, $4) ELSE s.last_completed_at END,
			updated_at = now()`, location, out.NextCursor, started, now)
	if err != nil {
		return fmt.Errorf("error recording the sync state: %w", err)
	}
	return nil
}

// contactError is a contact that cannot be kept as a lead; the sync counts it and goes on.
type contactError struct{ reason string }

func (e *contactError) Error() string { return e.reason }

// leadFields are the lead columns a contact fills.
type leadFields struct {
	Name, Phone            string
	Email, Suburb, Address *string
}

func optionalText(s string) *string {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	return &s
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// merged is the lead's fields with the contact's non-empty values in place (HighLevel's are newer; an
// empty one does not clear what GEM knows).
func (f leadFields) merged(ct hlContact) leadFields {
	m := f
	m.Name = ct.name()
	if ph := strings.TrimSpace(ct.Phone); ph != "" {
		m.Phone = ph
	}
	for _, kv := range []struct {
		dst **string
		v   string
	}{{&m.Email, ct.Email}, {&m.Suburb, ct.City}, {&m.Address, ct.Address1}} {
		if v := optionalText(kv.v); v != nil {
			*kv.dst = v
		}
	}
	return m
}

func (f leadFields) equal(g leadFields) bool {
	return f.Name == g.Name && f.Phone == g.Phone && sameText(f.Email, g.Email) && sameText(f.Suburb, g.Suburb) && sameText(f.Address, g.Address)
}

// upsertContact keeps one contact as a lead and reports whether anything was written (or, in a dry run,
// would be). Each contact runs in a savepoint, so one that breaks a rule leaves the others' writes.
func (p *pack) upsertContact(ctx context.Context, c *executor.Call, ct hlContact, dryRun bool) (changed bool, err error) {
	if strings.TrimSpace(ct.ID) == "" {
		return false, &contactError{reason: "the contact has no id"}
	}
	if _, err := c.DB.Exec(ctx, `SAVEPOINT gem_hl_contact`); err != nil {
		return false, err
	}
	changed, err = p.upsertContactTx(ctx, c, ct, dryRun)
	var problem *contactError
	if errors.As(err, &problem) {
		if _, rbErr := c.DB.Exec(ctx, `ROLLBACK TO SAVEPOINT gem_hl_contact`); rbErr != nil {
			return false, rbErr
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	_, err = c.DB.Exec(ctx, `RELEASE SAVEPOINT gem_hl_contact`)
	return changed, err
}

func (p *pack) upsertContactTx(ctx context.Context, c *executor.Call, ct hlContact, dryRun bool) (bool, error) {
	var id uuid.UUID
	var linked *string
	var cur leadFields
	scan := func(row pgx.Row) error {
		return row.Scan(&id, &linked, &cur.Name, &cur.Phone, &cur.Email, &cur.Suburb, &cur.Address)
	}
	const columns = `id, highlevel_contact_id, name, phone, email, suburb, address`
	// A contact's number is read as leads.create reads one, so it finds the lead however either was typed.
	var number phone.Number
	if typed := strings.TrimSpace(ct.Phone); typed != "" {
		n, err := phone.Parse(typed, p.phoneRegion)
		if err != nil {
			return false, &contactError{reason: "its phone number cannot be a lead's: " + err.Error()}
		}
		number = n
	}
	err := scan(c.DB.QueryRow(ctx, `SELECT `+columns+` FROM leads WHERE highlevel_contact_id = $1 FOR UPDATE`, ct.ID))
	if errors.Is(err, pgx.ErrNoRows) && number.E164 != "" {
		err = scan(c.DB.QueryRow(ctx, gemsql.LeadByPhoneSQL(columns, "FOR UPDATE"), gemsql.LeadByPhoneArgs(number)...))
		if err == nil && linked != nil && *linked != ct.ID {
			return false, &contactError{reason: fmt.Sprintf("its phone number belongs to lead %s, already tied to HighLevel contact %s", id, *linked)}
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		if number.E164 == "" {
			return false, &contactError{reason: "the contact has no phone number, which a GEM lead needs"}
		}
		if dryRun {
			return true, nil
		}
		f := leadFields{}.merged(ct)
		_, err := c.DB.Exec(ctx, `INSERT INTO leads (name, phone, phone_e164, email, suburb, address, source, notes, highlevel_contact_id)
			VALUES ($1, $2, $3, $4, $5, $6, 'other', $7, $8)`,
			f.Name, f.Phone, number.E164, f.Email, f.Suburb, f.Address, "From HighLevel contact "+ct.ID, ct.ID)
		return true, asContactError(err)
	}
	if err != nil {
		return false, fmt.Errorf("error finding the lead of HighLevel contact %s: %w", ct.ID, err)
	}
	want := cur.merged(ct)
	if linked != nil && want.equal(cur) {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	// The lead's key follows its number when the contact brings one (a lead from before keys gets its key).
	_, err = c.DB.Exec(ctx, `UPDATE leads SET name = $2, phone = $3, email = $4, suburb = $5, address = $6,
			highlevel_contact_id = $7, phone_e164 = coalesce($8, phone_e164), updated_at = now()
		WHERE id = $1`, id, want.Name, want.Phone, want.Email, want.Suburb, want.Address, ct.ID, optionalText(number.E164))
	return true, asContactError(err)
}

// asContactError turns a rule the database enforces (a unique phone number, a check) into a contact the
// sync skips; other errors stay errors.
func asContactError(err error) error {
	if err == nil {
		return nil
	}
	if code := sqlState(err); code != "" && (strings.HasPrefix(code, "23") || strings.HasPrefix(code, "22")) {
		return &contactError{reason: "GEM refused it as a lead: " + err.Error()}
	}
	return err
}
