package integrationshandlers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	integrationshandlers "github.com/gemhq/gem/packs/integrations/handlers"
	"github.com/gemhq/gem/packs/integrations/handlers/integrationstest"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// highLevelFake starts a HighLevel fake and a config pointing at it, with retries fast enough for tests.
func highLevelFake(t *testing.T) (*integrationstest.HighLevel, integrationspack.Config) {
	t.Helper()
	hl := integrationstest.NewHighLevel()
	t.Cleanup(hl.Close)
	cfg := integrationspack.Config{HighLevel: hl.Config()}
	cfg.HighLevel.RetryBaseDelay, cfg.HighLevel.RetryMaxDelay, cfg.HighLevel.RetryMaxAttempts = time.Millisecond, 5*time.Millisecond, 3
	return hl, cfg
}

func (b *testBundle) lead(t *testing.T, ctx context.Context, name, phone string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO leads (name, phone, suburb, address) VALUES ($1, $2, 'Marrickville', '12 Smith St') RETURNING id`,
		name, phone).Scan(&id))
	return id
}

func (b *testBundle) inspection(t *testing.T, ctx context.Context, lead uuid.UUID) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO inspections (lead_id, inspector, summary) VALUES ($1, 'Sam', 'Ridge capping cracked along the north side.')
		RETURNING id`, lead).Scan(&id))
	_, err := b.pool.Exec(ctx, `INSERT INTO inspection_defects (inspection_id, category, severity, notes) VALUES ($1, 'ridge', 'high', 'cracked ridge capping'),
		($1, 'valley', 'medium', 'rusted valley iron')`, id)
	require.NoError(t, err)
	return id
}

func (b *testBundle) quote(t *testing.T, ctx context.Context, lead, inspection uuid.UUID) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO quotes (lead_id, inspection_id, valid_until, subtotal_cents, gst_cents, total_cents)
		VALUES ($1, $2, current_date + 30, 254600, 25460, 280060) RETURNING id`, lead, inspection).Scan(&id))
	return id
}

type hlHealth struct {
	Status       string `json:"status"`
	LocationID   string `json:"location_id"`
	LocationName string `json:"location_name"`
	Checks       struct {
		API       bool  `json:"api"`
		Pipeline  *bool `json:"pipeline"`
		SyncQueue bool  `json:"sync_queue"`
	} `json:"checks"`
	Detail string `json:"detail"`
}

// TestHighLevelHealthCheck: ok when the location and the pipeline's stages are there, degraded when a
// stage is not, down when the token is refused.
func TestHighLevelHealthCheck(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	ctx, b := setup(t, cfg)
	h := ok[hlHealth](t, b.run(t, ctx, "integrations.highlevel.health_check", map[string]any{}))
	require.Equal(t, "ok", h.Status, h.Detail)
	require.Equal(t, hl.LocationID, h.LocationID)
	require.Equal(t, "Fake Roofing Co", h.LocationName)
	require.True(t, h.Checks.API)
	require.True(t, *h.Checks.Pipeline)

	wrongStage := cfg
	wrongStage.HighLevel.StageIDs = map[string]string{"quoted": "stage-nope"}
	ctx, b = setup(t, wrongStage)
	h = ok[hlHealth](t, b.run(t, ctx, "integrations.highlevel.health_check", map[string]any{}))
	require.Equal(t, "degraded", h.Status)
	require.False(t, *h.Checks.Pipeline)
	require.Contains(t, h.Detail, "quoted=stage-nope")

	badToken := cfg
	badToken.HighLevel.Token = "pit-revoked"
	ctx, b = setup(t, badToken)
	h = ok[hlHealth](t, b.run(t, ctx, "integrations.highlevel.health_check", map[string]any{}))
	require.Equal(t, "down", h.Status)
	require.False(t, h.Checks.API)
	require.Equal(t, hl.LocationID, h.LocationID)
	require.Contains(t, h.Detail, "Invalid JWT")
}

type syncResult struct {
	Status string `json:"status"`
	Counts struct {
		Fetched, Upserted, Unchanged, Errors int
	} `json:"counts"`
	Cursor     *string `json:"cursor"`
	NextCursor *string `json:"next_cursor"`
	Total      int     `json:"total"`
	Problems   []struct {
		ContactID string `json:"contact_id"`
		Reason    string `json:"reason"`
	} `json:"problems"`
}

// TestHighLevelSyncContacts: contacts become leads keyed by their contact id, page by page; a known phone
// number ties the existing lead; unchanged contacts write nothing; later syncs read only what changed.
func TestHighLevelSyncContacts(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	ctx, b := setup(t, cfg)
	existing := b.lead(t, ctx, "Priya N", "0433 222 111")
	base := time.Now().UTC().Add(-time.Hour)
	at := func(minutes int) string {
		return base.Add(time.Duration(minutes) * time.Minute).Format(time.RFC3339Nano)
	}
	hl.AddContact(integrationstest.HighLevelContact{ID: "c1", FirstName: "Kim", LastName: "Nguyen", Phone: "+61411555666", Email: "kim@example.com", City: "Newtown", DateUpdated: at(1)})
	hl.AddContact(integrationstest.HighLevelContact{ID: "c2", ContactName: "Priya Nair", Phone: "0433222111", Address1: "4 Elm Rd", DateUpdated: at(2)})
	hl.AddContact(integrationstest.HighLevelContact{ID: "c3", ContactName: "No Phone", Email: "np@example.com", DateUpdated: at(3)})
	hl.AddContact(integrationstest.HighLevelContact{ID: "c4", ContactName: "Lee Smith", Phone: "+61400111222", DateUpdated: at(4)})

	// A dry run counts without writing.
	r := b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"limit": 10, "dry_run": true})
	dry := ok[syncResult](t, r)
	require.Equal(t, 3, dry.Counts.Upserted)
	require.Equal(t, 1, dry.Counts.Errors)
	require.Empty(t, r.Effects.DBWrites)

	r = b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"limit": 2})
	page1 := ok[syncResult](t, r)
	require.Equal(t, "ok", page1.Status)
	require.Equal(t, 4, page1.Total)
	require.Equal(t, 2, page1.Counts.Fetched)
	require.Equal(t, 2, page1.Counts.Upserted)
	require.Nil(t, page1.Cursor)
	require.NotNil(t, page1.NextCursor)
	require.Equal(t, 1, writes(r)["leads insert"])
	require.Equal(t, 1, writes(r)["leads update"], "Priya's lead is found by her phone number and tied to c2")
	var name, contact string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT name, highlevel_contact_id FROM leads WHERE id = $1`, existing).Scan(&name, &contact))
	require.Equal(t, "Priya Nair", name)
	require.Equal(t, "c2", contact)

	r = b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"limit": 2, "cursor": *page1.NextCursor})
	page2 := ok[syncResult](t, r)
	require.Equal(t, "partial", page2.Status)
	require.Equal(t, 1, page2.Counts.Upserted)
	require.Equal(t, 1, page2.Counts.Errors)
	require.Equal(t, "c3", page2.Problems[0].ContactID)
	require.Contains(t, page2.Problems[0].Reason, "no phone number")
	require.Nil(t, page2.NextCursor)
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM leads WHERE highlevel_contact_id IS NOT NULL`))

	// Since the last complete sync, nothing changed: nothing is read.
	again := ok[syncResult](t, b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{}))
	require.Equal(t, 0, again.Counts.Fetched)

	// Reading everything again: unchanged contacts write nothing; a changed one updates its lead.
	hl.AddContact(integrationstest.HighLevelContact{ID: "c4", ContactName: "Lee Smith", Phone: "+61400111222", City: "Leichhardt"})
	r = b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"since": base.Format(time.RFC3339)})
	all := ok[syncResult](t, r)
	require.Equal(t, 4, all.Counts.Fetched)
	require.Equal(t, 1, all.Counts.Upserted)
	require.Equal(t, 2, all.Counts.Unchanged)
	require.Equal(t, 1, writes(r)["leads update"])
	var suburb string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT suburb FROM leads WHERE highlevel_contact_id = 'c4'`).Scan(&suburb))
	require.Equal(t, "Leichhardt", suburb)

	refused(t, b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"cursor": "not-a-cursor"}), registry.CodeValidation)

	// HighLevel refuses the listing (a 4xx): status failed with its message.
	hl.Fail(http.MethodPost, "/contacts/search", 1, http.StatusUnprocessableEntity, "filters.0.value must be valid")
	failed := ok[struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}](t, b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{}))
	require.Equal(t, "failed", failed.Status)
	require.Contains(t, failed.Error, "filters.0.value must be valid")

	// Rate limited: the executor retries the call.
	hl.Fail(http.MethodPost, "/contacts/search", 1, http.StatusTooManyRequests, "Too many requests")
	r = b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"since": base.Format(time.RFC3339)})
	require.Equal(t, 4, ok[syncResult](t, r).Counts.Fetched)
	require.Equal(t, 2, r.Attempt)
}

type inspectionSync struct {
	Status        string   `json:"status"`
	NoteID        string   `json:"note_id"`
	StageUpdated  bool     `json:"stage_updated"`
	Stage         string   `json:"stage"`
	OpportunityID string   `json:"opportunity_id"`
	Queued        []string `json:"queued"`
	Error         string   `json:"error"`
}

type queueRun struct {
	Status    string `json:"status"`
	Processed int    `json:"processed"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Requeued  int    `json:"requeued"`
	GaveUp    int    `json:"gave_up"`
	Remaining int    `json:"remaining"`
	Error     string `json:"error"`
}

// TestHighLevelSyncInspection: the summary goes on the contact as a note and the opportunity moves to the
// inspected stage; a refusal is status error; rate limiting queues the operations, and the queue sends
// them later, once.
func TestHighLevelSyncInspection(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	ctx, b := setup(t, cfg)
	hl.AddContact(integrationstest.HighLevelContact{ID: "c1", ContactName: "Kim Nguyen", Phone: "+61411555666"})
	lead := b.lead(t, ctx, "Kim Nguyen", "0411 555 666")
	ins := b.inspection(t, ctx, lead)
	input := map[string]any{"inspection_id": ins, "lead_id": lead, "highlevel_contact_id": "c1"}

	r := b.run(t, ctx, "integrations.highlevel.sync_inspection", input)
	out := ok[inspectionSync](t, r)
	require.Equal(t, "synced", out.Status, out.Error)
	require.True(t, out.StageUpdated)
	require.Equal(t, "inspected", out.Stage)
	notes := hl.Notes()
	require.Len(t, notes, 1)
	require.Equal(t, out.NoteID, notes[0].ID)
	require.Contains(t, notes[0].Body, "Kim Nguyen")
	require.Contains(t, notes[0].Body, "ridge (high): cracked ridge capping")
	require.Contains(t, notes[0].Body, "Ridge capping cracked along the north side.")
	opps := hl.Opportunities()
	require.Len(t, opps, 1)
	require.Equal(t, integrationstest.HighLevelStages["inspected"], opps[0].PipelineStageID)
	require.Equal(t, "open", opps[0].Status)
	require.Equal(t, map[string]int{"leads update": 1}, writes(r), "the lead is tied to the contact")
	require.Equal(t, []registry.OutsideEffect{{Kind: "highlevel_note", Target: "contact c1", Reference: out.NoteID},
		{Kind: "highlevel_opportunity", Target: "contact c1", Reference: out.OpportunityID}}, r.Effects.Outside)

	// A lead that is not the inspection's, and an inspection that does not exist.
	other := b.lead(t, ctx, "Someone Else", "0400 000 111")
	refused(t, b.run(t, ctx, "integrations.highlevel.sync_inspection", map[string]any{"inspection_id": ins, "lead_id": other, "highlevel_contact_id": "c1"}), registry.CodeValidation)
	refused(t, b.run(t, ctx, "integrations.highlevel.sync_inspection", map[string]any{"inspection_id": uuid.New(), "highlevel_contact_id": "c1"}), registry.CodeNotFound)

	// HighLevel refuses (an unknown contact): status error with its message, nothing queued.
	bad := ok[inspectionSync](t, b.run(t, ctx, "integrations.highlevel.sync_inspection", map[string]any{"inspection_id": ins, "highlevel_contact_id": "c-unknown"}))
	require.Equal(t, "error", bad.Status)
	require.Contains(t, bad.Error, "Contact not found")
	require.Empty(t, bad.Queued)

	// Rate limited: the note and the stage are queued, status queued_retry.
	hl.Fail(http.MethodPost, "/contacts/c1/notes", 1, http.StatusTooManyRequests, "Too many requests")
	r = b.run(t, ctx, "integrations.highlevel.sync_inspection", input)
	queued := ok[inspectionSync](t, r)
	require.Equal(t, "queued_retry", queued.Status)
	require.Len(t, queued.Queued, 2)
	require.False(t, queued.StageUpdated)
	require.Equal(t, 2, writes(r)["integration_sync_queue insert"])
	require.Len(t, hl.Notes(), 1, "nothing reached HighLevel")
	var attempts int
	var lastStatus int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT attempts, last_http_status FROM integration_sync_queue WHERE operation = 'create_note'`).Scan(&attempts, &lastStatus))
	require.Equal(t, 1, attempts, "the note was tried once")
	require.Equal(t, http.StatusTooManyRequests, lastStatus)

	time.Sleep(20 * time.Millisecond) // past the (test-sized) backoff
	run := ok[queueRun](t, b.run(t, ctx, "integrations.highlevel.process_sync_queue", map[string]any{}))
	require.Equal(t, "ok", run.Status)
	require.Equal(t, 2, run.Processed)
	require.Equal(t, 2, run.Succeeded)
	require.Equal(t, 0, run.Remaining)
	require.Len(t, r.Effects.Outside, 0, "the queued call sent nothing")
	require.Len(t, hl.Notes(), 2)
	require.Len(t, hl.Opportunities(), 1, "the contact's opportunity is moved, not duplicated")
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM integration_sync_queue WHERE status = 'succeeded' AND result ->> 'id' <> ''`))

	// Nothing left: a second run processes nothing and sends nothing.
	run = ok[queueRun](t, b.run(t, ctx, "integrations.highlevel.process_sync_queue", map[string]any{"limit": 5}))
	require.Equal(t, 0, run.Processed)
	require.Len(t, hl.Notes(), 2)
}

type quoteSync struct {
	Status        string   `json:"status"`
	NoteID        string   `json:"note_id"`
	TaskID        string   `json:"task_id"`
	TaskCreated   bool     `json:"task_created"`
	StageUpdated  bool     `json:"stage_updated"`
	OpportunityID string   `json:"opportunity_id"`
	Amount        float64  `json:"amount"`
	Queued        []string `json:"queued"`
	Error         string   `json:"error"`
}

// TestHighLevelSyncQuote: a note, a follow-up task and the quoted stage with the quote's value; a 5xx
// queues what is left (status error, as the contract has no queued status for quotes).
func TestHighLevelSyncQuote(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	ctx, b := setup(t, cfg)
	hl.AddContact(integrationstest.HighLevelContact{ID: "c9", ContactName: "Lee Smith", Phone: "+61400111222"})
	lead := b.lead(t, ctx, "Lee Smith", "0400 111 222")
	quote := b.quote(t, ctx, lead, b.inspection(t, ctx, lead))

	out := ok[quoteSync](t, b.run(t, ctx, "integrations.highlevel.sync_quote", map[string]any{"quote_id": quote, "highlevel_contact_id": "c9",
		"quote_url": "https://example.com/q/1.pdf"}))
	require.Equal(t, "synced", out.Status, out.Error)
	require.True(t, out.TaskCreated)
	require.True(t, out.StageUpdated)
	require.Equal(t, 2800.60, out.Amount)
	require.Contains(t, hl.Notes()[0].Body, "$2,800.60")
	require.Contains(t, hl.Notes()[0].Body, "https://example.com/q/1.pdf")
	tasks := hl.Tasks()
	require.Len(t, tasks, 1)
	require.Equal(t, out.TaskID, tasks[0].ID)
	require.False(t, tasks[0].Completed)
	due, err := time.Parse(time.RFC3339, tasks[0].DueDate)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().AddDate(0, 0, integrationspack.HighLevelTaskDueDaysDefault), due, time.Minute)
	opp := hl.Opportunities()[0]
	require.Equal(t, integrationstest.HighLevelStages["quoted"], opp.PipelineStageID)
	require.Equal(t, 2800.60, *opp.MonetaryValue)

	// The amount given wins over the quote's total.
	out = ok[quoteSync](t, b.run(t, ctx, "integrations.highlevel.sync_quote", map[string]any{"quote_id": quote, "lead_id": lead,
		"highlevel_contact_id": "c9", "quote_amount": 2500}))
	require.Equal(t, 2500.0, out.Amount)
	require.Equal(t, 2500.0, *hl.Opportunities()[0].MonetaryValue)

	refused(t, b.run(t, ctx, "integrations.highlevel.sync_quote", map[string]any{"quote_id": uuid.New(), "highlevel_contact_id": "c9"}), registry.CodeNotFound)

	// The task endpoint fails with a 503: the task and the stage wait in the queue.
	hl.Fail(http.MethodPost, "/contacts/c9/tasks", 1, http.StatusServiceUnavailable, "upstream unavailable")
	out = ok[quoteSync](t, b.run(t, ctx, "integrations.highlevel.sync_quote", map[string]any{"quote_id": quote, "highlevel_contact_id": "c9"}))
	require.Equal(t, "error", out.Status)
	require.NotEmpty(t, out.NoteID, "the note went through")
	require.False(t, out.TaskCreated)
	require.Len(t, out.Queued, 2)
	require.Contains(t, out.Error, "queued for retry")
	time.Sleep(20 * time.Millisecond)
	run := ok[queueRun](t, b.run(t, ctx, "integrations.highlevel.process_sync_queue", map[string]any{}))
	require.Equal(t, 2, run.Succeeded)
	require.Len(t, hl.Tasks(), 3)
}

// TestHighLevelUpdateLeadStage: the contact's opportunity is created at the mapped stage, then moved; an
// unmapped stage is not_configured; a 4xx is status error.
func TestHighLevelUpdateLeadStage(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	ctx, b := setup(t, cfg)
	hl.AddContact(integrationstest.HighLevelContact{ID: "c5", ContactName: "Ana Costa", Phone: "+61400555666"})
	lead := b.lead(t, ctx, "Ana Costa", "0400 555 666")
	type result struct {
		Status          string `json:"status"`
		OpportunityID   string `json:"opportunity_id"`
		NewStage        string `json:"new_stage"`
		PipelineStageID string `json:"pipeline_stage_id"`
		NoteID          string `json:"note_id"`
		Error           string `json:"error"`
	}
	first := ok[result](t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"lead_id": lead, "highlevel_contact_id": "c5", "stage": "contacted"}))
	require.Equal(t, "synced", first.Status, first.Error)
	require.Equal(t, integrationstest.HighLevelStages["contacted"], first.PipelineStageID)
	won := ok[result](t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c5", "stage": "won",
		"notes": "Signed on site."}))
	require.Equal(t, first.OpportunityID, won.OpportunityID, "the same opportunity moves")
	opps := hl.Opportunities()
	require.Len(t, opps, 1)
	require.Equal(t, "won", opps[0].Status)
	require.Equal(t, "Ana Costa", opps[0].Name)
	require.Contains(t, hl.Notes()[0].Body, "Signed on site.")
	var contact string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT highlevel_contact_id FROM leads WHERE id = $1`, lead).Scan(&contact))
	require.Equal(t, "c5", contact)

	hl.Fail(http.MethodPut, "/opportunities/", 1, http.StatusUnprocessableEntity, "pipelineStageId must be a valid id")
	bad := ok[result](t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c5", "stage": "lost"}))
	require.Equal(t, "error", bad.Status)
	require.Contains(t, bad.Error, "pipelineStageId must be a valid id")

	refused(t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"lead_id": uuid.New(), "highlevel_contact_id": "c5", "stage": "won"}), registry.CodeNotFound)

	partial := cfg
	partial.HighLevel.StageIDs = map[string]string{"won": integrationstest.HighLevelStages["won"]}
	ctx, b = setup(t, partial)
	notConfigured(t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c5", "stage": "quoted"}),
		integrationspack.EnvHighLevelStageIDs)
}

// TestHighLevelSyncQueueBackoff: a queued operation HighLevel keeps refusing with 5xx is rescheduled with
// a growing wait until its last attempt, then given up; a 4xx ends it at once; rate limiting stops a run.
func TestHighLevelSyncQueueBackoff(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	ctx, b := setup(t, cfg)
	hl.AddContact(integrationstest.HighLevelContact{ID: "c7", ContactName: "Bo Li", Phone: "+61400777888"})

	hl.Fail(http.MethodPost, "/contacts/c7/notes", 10, http.StatusBadGateway, "bad gateway")
	out := ok[struct {
		Status string   `json:"status"`
		Queued []string `json:"queued"`
	}](t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c7", "stage": "new", "notes": "first call"}))
	require.Equal(t, "error", out.Status)
	require.Len(t, out.Queued, 1, "the stage moved; the note waits")
	note := out.Queued[0]

	var attempts int
	var next time.Time
	for want := 2; want <= 3; want++ {
		time.Sleep(20 * time.Millisecond)
		run := ok[queueRun](t, b.run(t, ctx, "integrations.highlevel.process_sync_queue", map[string]any{}))
		require.Equal(t, 1, run.Processed)
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT attempts, next_attempt_at FROM integration_sync_queue WHERE id = $1`, note).Scan(&attempts, &next))
		require.Equal(t, want, attempts)
		if want < 3 {
			require.Equal(t, 1, run.Requeued)
			require.Equal(t, "ok", run.Status)
		} else {
			require.Equal(t, 1, run.GaveUp, "three attempts in all")
			require.Equal(t, "error", run.Status)
			require.Contains(t, run.Error, "gave up after 3 attempts")
		}
	}
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM integration_sync_queue WHERE id = $1 AND status = 'failed' AND finished_at IS NOT NULL`, note))

	// The backoff doubles per attempt, with jitter (a random half), capped, and never below Retry-After.
	slow := cfg.HighLevel
	slow.RetryBaseDelay, slow.RetryMaxDelay = 10*time.Second, time.Minute
	for attempt, bounds := range map[int][2]time.Duration{1: {5 * time.Second, 10 * time.Second}, 2: {10 * time.Second, 20 * time.Second},
		4: {30 * time.Second, time.Minute}, 9: {30 * time.Second, time.Minute}} {
		for range 20 {
			d := integrationshandlers.Backoff(slow, attempt, 0)
			require.GreaterOrEqual(t, d, bounds[0], "attempt %d", attempt)
			require.LessOrEqual(t, d, bounds[1], "attempt %d", attempt)
		}
	}
	require.Equal(t, 2*time.Minute, integrationshandlers.Backoff(slow, 1, 2*time.Minute))

	// A 4xx ends a queued operation at once; a 429 stops the run, leaving the rest for later.
	hl2, cfg2 := highLevelFake(t)
	ctx, b = setup(t, cfg2)
	hl2.AddContact(integrationstest.HighLevelContact{ID: "c8", ContactName: "Jo", Phone: "+61400888999"})
	hl2.Fail(http.MethodPost, "/contacts/c8/notes", 1, http.StatusTooManyRequests, "Too many requests")
	for range 3 {
		_ = ok[struct{}](t, b.run(t, ctx, "integrations.highlevel.update_lead_stage", map[string]any{"highlevel_contact_id": "c8", "stage": "new", "notes": "n"}))
		hl2.Fail(http.MethodPost, "/contacts/c8/notes", 1, http.StatusTooManyRequests, "Too many requests")
	}
	time.Sleep(20 * time.Millisecond)
	run := ok[queueRun](t, b.run(t, ctx, "integrations.highlevel.process_sync_queue", map[string]any{}))
	require.Equal(t, 1, run.Processed, "rate limited: the run stops")
	require.Equal(t, 3, run.Remaining)
	hl2.Fail(http.MethodPost, "/contacts/c8/notes", 1, http.StatusBadRequest, "body is too long")
	time.Sleep(20 * time.Millisecond)
	run = ok[queueRun](t, b.run(t, ctx, "integrations.highlevel.process_sync_queue", map[string]any{}))
	require.Equal(t, 3, run.Processed)
	require.Equal(t, 1, run.GaveUp)
	require.Equal(t, 2, run.Succeeded)
	require.Equal(t, "error", run.Status)
	require.Contains(t, run.Error, "body is too long")
}

// TestPhoneRegionThatCannotBeUsed: the contact sync reads phone numbers in the business pack's region
// (GEM_PHONE_REGION, read by businesspack.ConfigFromEnv and handed to Register); one that cannot be used makes
// it answer not_configured with the reason, reading no contact.
func TestPhoneRegionThatCannotBeUsed(t *testing.T) {
	t.Parallel()
	hl, cfg := highLevelFake(t)
	biz := businesspack.ConfigFromEnv(func(k string) string { return map[string]string{"GEM_PHONE_REGION": "ZZ"}[k] })
	ctx, b := setupWith(t, cfg, biz)
	r := b.run(t, ctx, "integrations.highlevel.sync_contacts", map[string]any{"limit": 10})
	notConfigured(t, r, "GEM_PHONE_REGION")
	require.Contains(t, r.Error.Message, `GEM_PHONE_REGION="ZZ"`)
	require.Empty(t, hl.Requests(), "no contact was read")
}
