package integrationshandlers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Statuses of the outbound sync tools.
const (
	syncSynced      = "synced"
	syncQueuedRetry = "queued_retry"
	syncError       = "error"
)

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// stageMove is the stage operation for a GEM stage, or nil with the reason when the pipeline or the stage's
// id is not configured.
func (p *pack) stageMove(contactID, stage, name string, value *float64) (*syncOp, string) {
	cfg := p.cfg.HighLevel
	if cfg.PipelineID == "" {
		return nil, integrationspack.EnvHighLevelPipelineID + " is not set"
	}
	id, ok := cfg.StageIDs[stage]
	if !ok {
		return nil, fmt.Sprintf("%s maps no stage id to %s", integrationspack.EnvHighLevelStageIDs, stage)
	}
	return &syncOp{Kind: opMoveStage, ContactID: contactID, Move: &hlStageMove{ContactID: contactID, PipelineID: cfg.PipelineID,
		StageID: id, Stage: stage, Status: opportunityStatus(stage), Name: name, MonetaryValue: value}}, ""
}

// linkLead ties a lead to its HighLevel contact, unless it or the contact is already tied to another.
func linkLead(ctx context.Context, c *executor.Call, leadID uuid.UUID, contactID string) error {
	_, err := c.DB.Exec(ctx, `UPDATE leads SET highlevel_contact_id = $2, updated_at = now()
		WHERE id = $1 AND highlevel_contact_id IS NULL
		  AND NOT EXISTS (SELECT 1 FROM leads WHERE highlevel_contact_id = $2)`, leadID, contactID)
	if err != nil {
		return fmt.Errorf("error tying lead %s to HighLevel contact %s: %w", leadID, contactID, err)
	}
	return nil
}

// checkLead makes sure a lead named in the input exists and is the record's own lead.
func checkLead(ctx context.Context, c *executor.Call, given *uuid.UUID, owner uuid.UUID, what string, id uuid.UUID) (uuid.UUID, error) {
	if given == nil {
		return owner, nil
	}
	var exists bool
	if err := c.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leads WHERE id = $1)`, *given).Scan(&exists); err != nil {
		return uuid.Nil, err
	}
	if !exists {
		return uuid.Nil, executor.NotFound("lead %s does not exist", *given)
	}
	if *given != owner {
		return uuid.Nil, executor.Invalid("%s %s belongs to lead %s, not to lead %s", what, id, owner, *given)
	}
	return owner, nil
}

// outcomeSummary folds the operations' outcomes into a status and error text.
func outcomeSummary(outcomes ...*opOutcome) (status, errText string, queued []uuid.UUID) {
	var failures []string
	queued = []uuid.UUID{}
	for _, o := range outcomes {
		if o == nil {
			continue
		}
		if o.queued != nil {
			queued = append(queued, *o.queued)
		}
		if o.failure != "" {
			failures = append(failures, o.failure)
		}
	}
	switch {
	case len(failures) > 0:
		return syncError, strings.Join(failures, "; "), queued
	case len(queued) > 0:
		return syncQueuedRetry, "", queued
	}
	return syncSynced, "", queued
}

// --- integrations.highlevel.sync_inspection ---

type syncInspectionInput struct {
	InspectionID       uuid.UUID  `json:"inspection_id"`
	LeadID             *uuid.UUID `json:"lead_id"`
	HighLevelContactID string     `json:"highlevel_contact_id"`
}

type syncInspectionOutput struct {
	Status             string      `json:"status"`
	InspectionID       string      `json:"inspection_id"`
	HighLevelContactID string      `json:"highlevel_contact_id"`
	NoteID             string      `json:"note_id,omitempty"`
	StageUpdated       bool        `json:"stage_updated"`
	Stage              string      `json:"stage,omitempty"`
	OpportunityID      string      `json:"opportunity_id,omitempty"`
	StageSkipped       string      `json:"stage_skipped,omitempty"`
	Queued             []uuid.UUID `json:"queued"`
	Error              string      `json:"error,omitempty"`
}

// inspectionNote is the note posted for an inspection, built from its rows. Rows are read as JSON so the
// note follows whatever columns the inspection tables have.
func inspectionNote(ctx context.Context, c *executor.Call, id uuid.UUID) (leadID uuid.UUID, note string, err error) {
	var ins, lead map[string]any
	err = c.DB.QueryRow(ctx, `SELECT i.lead_id, to_jsonb(i), to_jsonb(l) FROM inspections i JOIN leads l ON l.id = i.lead_id
		WHERE i.id = $1`, id).Scan(&leadID, &ins, &lead)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, "", executor.NotFound("inspection %s does not exist", id)
	}
	if err != nil {
		return uuid.Nil, "", fmt.Errorf("error reading inspection %s: %w", id, err)
	}
	var defects []string
	rows, err := c.DB.Query(ctx, `SELECT coalesce(d ->> 'category', d ->> 'title', 'defect'), coalesce(d ->> 'severity', ''),
			coalesce(d ->> 'notes', d ->> 'description', '')
		FROM inspection_defects x, to_jsonb(x) d WHERE x.inspection_id = $1 ORDER BY x.created_at`, id)
	if err != nil {
		return uuid.Nil, "", fmt.Errorf("error reading the defects of inspection %s: %w", id, err)
	}
	var kind, severity, notes string
	if _, err := pgx.ForEachRow(rows, []any{&kind, &severity, &notes}, func() error {
		d := kind
		if severity != "" {
			d += " (" + severity + ")"
		}
		if notes = strings.TrimSpace(notes); notes != "" {
			d += ": " + notes
		}
		defects = append(defects, d)
		return nil
	}); err != nil {
		return uuid.Nil, "", fmt.Errorf("error reading the defects of inspection %s: %w", id, err)
	}
	var measurements, photos int
	if err := c.DB.QueryRow(ctx, `SELECT (SELECT count(*) FROM inspection_measurements WHERE inspection_id = $1),
		(SELECT count(*) FROM inspection_photos WHERE inspection_id = $1)`, id).Scan(&measurements, &photos); err != nil {
		return uuid.Nil, "", fmt.Errorf("error counting the records of inspection %s: %w", id, err)
	}
	text := func(m map[string]any, k string) string { s, _ := m[k].(string); return strings.TrimSpace(s) }
	var b strings.Builder
	fmt.Fprintf(&b, "GEM inspection for %s", cmp.Or(text(lead, "name"), "the customer"))
	if addr := strings.TrimSpace(strings.Join([]string{text(lead, "address"), text(lead, "suburb")}, " ")); addr != "" {
		fmt.Fprintf(&b, ", %s", addr)
	}
	fmt.Fprintf(&b, " (inspection %s, %s).\n", id, cmp.Or(text(ins, "status"), "recorded"))
	if who := text(ins, "inspector"); who != "" {
		fmt.Fprintf(&b, "Inspector: %s.\n", who)
	}
	if s := cmp.Or(text(ins, "summary"), text(ins, "scope_summary")); s != "" {
		fmt.Fprintf(&b, "Summary: %s\n", s)
	}
	if len(defects) == 0 {
		b.WriteString("Defects: none recorded.\n")
	} else {
		fmt.Fprintf(&b, "Defects (%d): %s.\n", len(defects), strings.Join(defects, "; "))
	}
	fmt.Fprintf(&b, "Measurements: %d. Photos: %d.", measurements, photos)
	return leadID, b.String(), nil
}

// syncInspection posts an inspection's summary as a note on the HighLevel contact and moves the contact's
// opportunity to the inspected stage (or inspection_scheduled when only that is mapped).
func (p *pack) syncInspection(ctx context.Context, c *executor.Call, in syncInspectionInput) (*syncInspectionOutput, error) {
	if err := p.highLevelNotConfigured(); err != nil {
		return nil, err
	}
	contact := strings.TrimSpace(in.HighLevelContactID)
	if contact == "" {
		return nil, executor.Invalid("highlevel_contact_id is empty")
	}
	owner, note, err := inspectionNote(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	leadID, err := checkLead(ctx, c, in.LeadID, owner, "inspection", in.InspectionID)
	if err != nil {
		return nil, err
	}
	if err := linkLead(ctx, c, leadID, contact); err != nil {
		return nil, err
	}
	out := &syncInspectionOutput{InspectionID: in.InspectionID.String(), HighLevelContactID: contact}
	run := &syncRun{p: p, c: c, leadID: &leadID}
	noteOut, err := run.do(ctx, syncOp{Kind: opCreateNote, ContactID: contact, Note: note})
	if err != nil {
		return nil, err
	}
	out.NoteID = noteOut.ref
	stage := "inspected"
	if _, ok := p.cfg.HighLevel.StageIDs[stage]; !ok {
		stage = "inspection_scheduled"
	}
	var stageOut *opOutcome
	if op, skipped := p.stageMove(contact, stage, "Roof inspection", nil); op != nil {
		o, err := run.do(ctx, *op)
		if err != nil {
			return nil, err
		}
		stageOut = &o
		out.Stage, out.OpportunityID, out.StageUpdated = stage, o.ref, o.ref != ""
	} else {
		out.StageSkipped = skipped
	}
	out.Status, out.Error, out.Queued = outcomeSummary(&noteOut, stageOut)
	return out, nil
}

// --- integrations.highlevel.sync_quote ---

type syncQuoteInput struct {
	QuoteID            uuid.UUID  `json:"quote_id"`
	LeadID             *uuid.UUID `json:"lead_id"`
	HighLevelContactID string     `json:"highlevel_contact_id"`
	QuoteAmount        *float64   `json:"quote_amount"`
	QuoteURL           string     `json:"quote_url"`
}

type syncQuoteOutput struct {
	Status             string      `json:"status"`
	QuoteID            string      `json:"quote_id"`
	HighLevelContactID string      `json:"highlevel_contact_id"`
	NoteID             string      `json:"note_id,omitempty"`
	TaskID             string      `json:"task_id,omitempty"`
	TaskCreated        bool        `json:"task_created"`
	StageUpdated       bool        `json:"stage_updated"`
	OpportunityID      string      `json:"opportunity_id,omitempty"`
	StageSkipped       string      `json:"stage_skipped,omitempty"`
	Amount             float64     `json:"amount"`
	Queued             []uuid.UUID `json:"queued"`
	Error              string      `json:"error,omitempty"`
}

// money formats dollars as $1,234.50.
func money(amount float64) string {
	cents := int64(amount*100 + 0.5)
	if amount < 0 {
		cents = int64(amount*100 - 0.5)
	}
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	whole := fmt.Sprint(cents / 100)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	return fmt.Sprintf("%s$%s.%02d", sign, whole, cents%100)
}

// syncQuote posts a quote as a note on the HighLevel contact, creates a follow-up task for it and moves
// the contact's opportunity to the quoted stage with the quote's amount. A part HighLevel cannot take now is
// queued for integrations.highlevel.process_sync_queue; the status is then error (the contract has no
// queued status for quotes) with the queued ids listed.
func (p *pack) syncQuote(ctx context.Context, c *executor.Call, in syncQuoteInput) (*syncQuoteOutput, error) {
	if err := p.highLevelNotConfigured(); err != nil {
		return nil, err
	}
	contact := strings.TrimSpace(in.HighLevelContactID)
	if contact == "" {
		return nil, executor.Invalid("highlevel_contact_id is empty")
	}
	var owner uuid.UUID
	var q map[string]any
	err := c.DB.QueryRow(ctx, `SELECT lead_id, to_jsonb(q) FROM quotes q WHERE id = $1`, in.QuoteID).Scan(&owner, &q)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, executor.NotFound("quote %s does not exist", in.QuoteID)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading quote %s: %w", in.QuoteID, err)
	}
	leadID, err := checkLead(ctx, c, in.LeadID, owner, "quote", in.QuoteID)
	if err != nil {
		return nil, err
	}
	if in.QuoteAmount != nil && *in.QuoteAmount < 0 {
		return nil, executor.Invalid("quote_amount %v is negative", *in.QuoteAmount)
	}
	if err := linkLead(ctx, c, leadID, contact); err != nil {
		return nil, err
	}
	amount := 0.0
	if cents, ok := q["total_cents"].(float64); ok {
		amount = cents / 100
	}
	if in.QuoteAmount != nil {
		amount = *in.QuoteAmount
	}
	label := "Quote"
	if n, ok := q["number"].(float64); ok {
		label = fmt.Sprintf("Quote #%d", int64(n))
	}
	var note strings.Builder
	fmt.Fprintf(&note, "%s for %s (GST included)", label, money(amount))
	if s, _ := q["status"].(string); s != "" {
		fmt.Fprintf(&note, ", %s", s)
	}
	if v, _ := q["valid_until"].(string); v != "" {
		fmt.Fprintf(&note, ", valid until %s", v)
	}
	note.WriteString(".")
	if in.QuoteURL != "" {
		fmt.Fprintf(&note, "\n%s", in.QuoteURL)
	}
	fmt.Fprintf(&note, "\nGEM quote %s.", in.QuoteID)

	out := &syncQuoteOutput{QuoteID: in.QuoteID.String(), HighLevelContactID: contact, Amount: amount}
	run := &syncRun{p: p, c: c, leadID: &leadID}
	noteOut, err := run.do(ctx, syncOp{Kind: opCreateNote, ContactID: contact, Note: note.String()})
	if err != nil {
		return nil, err
	}
	out.NoteID = noteOut.ref
	taskBody := fmt.Sprintf("Follow up %s for %s.", strings.ToLower(label[:1])+label[1:], money(amount))
	if in.QuoteURL != "" {
		taskBody += " " + in.QuoteURL
	}
	due := time.Now().UTC().AddDate(0, 0, p.cfg.HighLevel.TaskDueDays).Truncate(time.Second)
	taskOut, err := run.do(ctx, syncOp{Kind: opCreateTask, ContactID: contact,
		Task: &hlTask{Title: "Follow up " + strings.ToLower(label[:1]) + label[1:], Body: taskBody, DueDate: due.Format(time.RFC3339)}})
	if err != nil {
		return nil, err
	}
	out.TaskID, out.TaskCreated = taskOut.ref, taskOut.ref != ""
	var stageOut *opOutcome
	if op, skipped := p.stageMove(contact, "quoted", label, &amount); op != nil {
		o, err := run.do(ctx, *op)
		if err != nil {
			return nil, err
		}
		stageOut = &o
		out.OpportunityID, out.StageUpdated = o.ref, o.ref != ""
	} else {
		out.StageSkipped = skipped
	}
	status, errText, queued := outcomeSummary(&noteOut, &taskOut, stageOut)
	out.Queued = queued
	if status == syncQueuedRetry {
		status, errText = syncError, queuedText(run.deferred, queued)
	}
	out.Status, out.Error = status, errText
	return out, nil
}

// queuedText says that parts of a sync wait in the queue, for tools whose contract has no queued status.
func queuedText(cause *providerError, queued []uuid.UUID) string {
	ids := make([]string, len(queued))
	for i, id := range queued {
		ids[i] = id.String()
	}
	reason := "HighLevel could not take it now"
	if cause != nil {
		reason = cause.Error()
	}
	return fmt.Sprintf("not synced yet: %s; queued for retry (integration_sync_queue %s), integrations.highlevel.process_sync_queue sends it",
		reason, strings.Join(ids, ", "))
}

// --- integrations.highlevel.update_lead_stage ---

type updateLeadStageInput struct {
	LeadID             *uuid.UUID `json:"lead_id"`
	HighLevelContactID string     `json:"highlevel_contact_id"`
	Stage              string     `json:"stage"`
	Notes              string     `json:"notes"`
}

type updateLeadStageOutput struct {
	Status             string      `json:"status"`
	HighLevelContactID string      `json:"highlevel_contact_id"`
	OpportunityID      string      `json:"opportunity_id,omitempty"`
	NewStage           string      `json:"new_stage"`
	PipelineStageID    string      `json:"pipeline_stage_id"`
	NoteID             string      `json:"note_id,omitempty"`
	Queued             []uuid.UUID `json:"queued"`
	Error              string      `json:"error,omitempty"`
}

// updateLeadStage moves the contact's opportunity in the configured pipeline to the stage mapped from a
// GEM stage (creating the opportunity if the contact has none there), and adds the notes as a note.
func (p *pack) updateLeadStage(ctx context.Context, c *executor.Call, in updateLeadStageInput) (*updateLeadStageOutput, error) {
	if err := p.highLevelNotConfigured(); err != nil {
		return nil, err
	}
	contact := strings.TrimSpace(in.HighLevelContactID)
	if contact == "" {
		return nil, executor.Invalid("highlevel_contact_id is empty")
	}
	name := "GEM lead"
	if in.LeadID != nil {
		err := c.DB.QueryRow(ctx, `SELECT name FROM leads WHERE id = $1`, *in.LeadID).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, executor.NotFound("lead %s does not exist", *in.LeadID)
		}
		if err != nil {
			return nil, fmt.Errorf("error reading lead %s: %w", *in.LeadID, err)
		}
	}
	op, skipped := p.stageMove(contact, in.Stage, name, nil)
	if op == nil {
		return nil, executor.NotConfigured("the HighLevel pipeline is not set up for stage "+in.Stage+": "+skipped,
			[]string{integrationspack.EnvHighLevelPipelineID, integrationspack.EnvHighLevelStageIDs},
			"Set "+integrationspack.EnvHighLevelPipelineID+" to the pipeline's id and "+integrationspack.EnvHighLevelStageIDs+" to stage=id pairs covering "+in.Stage+
				" (for example new=<id>,contacted=<id>,quoted=<id>,won=<id>,lost=<id>); integrations.highlevel.health_check checks them.")
	}
	if in.LeadID != nil {
		if err := linkLead(ctx, c, *in.LeadID, contact); err != nil {
			return nil, err
		}
	}
	out := &updateLeadStageOutput{HighLevelContactID: contact, NewStage: in.Stage, PipelineStageID: op.Move.StageID}
	run := &syncRun{p: p, c: c, leadID: in.LeadID}
	stageOut, err := run.do(ctx, *op)
	if err != nil {
		return nil, err
	}
	out.OpportunityID = stageOut.ref
	var noteOut *opOutcome
	if notes := strings.TrimSpace(in.Notes); notes != "" {
		o, err := run.do(ctx, syncOp{Kind: opCreateNote, ContactID: contact, Note: fmt.Sprintf("Stage: %s. %s", in.Stage, notes)})
		if err != nil {
			return nil, err
		}
		noteOut, out.NoteID = &o, o.ref
	}
	status, errText, queued := outcomeSummary(&stageOut, noteOut)
	out.Queued = queued
	if status == syncQueuedRetry {
		status, errText = syncError, queuedText(run.deferred, queued)
	}
	out.Status, out.Error = status, errText
	return out, nil
}
