package businesshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	ospack "github.com/gemhq/gem/packs/os"
	oshandlers "github.com/gemhq/gem/packs/os/handlers"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerPersonal(h executor.Handlers) {
	h.Func(businesspack.CheckIn, executor.Typed(checkIn))
	h.Func(businesspack.CreateCommitment, executor.Typed(createCommitment))
	h.Func(businesspack.ReviewCommitments, executor.Typed(reviewCommitments))
	h.Func(businesspack.CloseCommitment, executor.Typed(closeCommitment))
	h.Func(businesspack.DecisionSupport, executor.Typed(decisionSupport))
	h.Func(businesspack.BoundarySet, executor.Typed(boundarySet))
}

// checkInFreshFor is how long a check-in says how the owner is doing: decision support uses an older one for
// context only.
const checkInFreshFor = 48 * time.Hour

// Check-ins.

type checkInRecord struct {
	CheckinID  uuid.UUID `json:"checkin_id"`
	Energy     string    `json:"energy"`
	Stress     string    `json:"stress"`
	Focus      string    `json:"focus"`
	Notes      *string   `json:"notes"`
	RecordedAt time.Time `json:"recorded_at"`
}

const checkInColumns = `id, energy, stress, focus, notes, created_at`

func scanCheckIn(row pgx.Row) (checkInRecord, error) {
	var r checkInRecord
	err := row.Scan(&r.CheckinID, &r.Energy, &r.Stress, &r.Focus, &r.Notes, &r.RecordedAt)
	return r, err
}

// latestCheckIn is the newest check-in, or nil.
func latestCheckIn(ctx context.Context, db executor.DB) (*checkInRecord, error) {
	r, err := scanCheckIn(db.QueryRow(ctx, `SELECT `+checkInColumns+` FROM personal_checkins ORDER BY created_at DESC, id LIMIT 1`))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the latest check-in: %w", err)
	}
	return &r, nil
}

// checkInInput is personal.check_in's input as the handler reads it: notes are kept as given (null or
// left out is none).
type checkInInput struct {
	businesspack.CheckInInput
	Notes *string `json:"notes"`
}

type checkInOutput struct {
	checkInRecord
	Previous *checkInRecord `json:"previous"`
}

// checkIn records how the owner is doing, and returns the check-in before it for comparison.
func checkIn(ctx context.Context, c *executor.Call, in checkInInput) (*checkInOutput, error) {
	previous, err := latestCheckIn(ctx, c.DB)
	if err != nil {
		return nil, err
	}
	r, err := scanCheckIn(c.DB.QueryRow(ctx, `INSERT INTO personal_checkins (energy, stress, focus, notes) VALUES ($1, $2, $3, $4)
		RETURNING `+checkInColumns, in.Energy, in.Stress, in.Focus, in.Notes))
	if err != nil {
		return nil, err
	}
	return &checkInOutput{checkInRecord: r, Previous: previous}, nil
}

// Commitments.

type commitment struct {
	CommitmentID     uuid.UUID  `json:"commitment_id"`
	Title            string     `json:"title"`
	Details          *string    `json:"details"`
	Status           string     `json:"status"`
	ReviewAt         *time.Time `json:"review_at"`
	OverdueForReview bool       `json:"overdue_for_review"`
	Outcome          *string    `json:"outcome"`
	ClosingNote      *string    `json:"closing_note"`
	CreatedAt        time.Time  `json:"created_at"`
	ClosedAt         *time.Time `json:"closed_at"`
}

const commitmentColumns = `id, title, details, status, review_at, status = 'active' AND coalesce(review_at <= now(), false),
	outcome, closing_note, created_at, closed_at`

func scanCommitment(row pgx.Row) (commitment, error) {
	var m commitment
	err := row.Scan(&m.CommitmentID, &m.Title, &m.Details, &m.Status, &m.ReviewAt, &m.OverdueForReview, &m.Outcome,
		&m.ClosingNote, &m.CreatedAt, &m.ClosedAt)
	return m, err
}

// createCommitmentInput is personal.create_commitment's input as the handler reads it: details are kept
// as given (null or left out is none).
type createCommitmentInput struct {
	businesspack.CreateCommitmentInput
	Details *string `json:"details"`
}

type createCommitmentOutput struct {
	CommitmentID uuid.UUID  `json:"commitment_id"`
	Commitment   commitment `json:"commitment"`
	ReminderID   *string    `json:"reminder_id"`
}

// createCommitment records a commitment; with review_at it also sets a personal reminder to review it then.
func createCommitment(ctx context.Context, c *executor.Call, in createCommitmentInput) (*createCommitmentOutput, error) {
	title := strings.TrimSpace(in.Title)
	if title == "" {
		return nil, executor.InvalidField("title", "is blank")
	}
	if in.ReviewAt != nil && in.ReviewAt.Before(time.Now()) {
		return nil, executor.InvalidField("review_at", "(%s) is in the past: a review is set for a later time", in.ReviewAt.Format(time.RFC3339))
	}
	m, err := scanCommitment(c.DB.QueryRow(ctx, `INSERT INTO personal_commitments (title, details, review_at) VALUES ($1, $2, $3)
		RETURNING `+commitmentColumns, title, in.Details, in.ReviewAt))
	if err != nil {
		return nil, err
	}
	out := &createCommitmentOutput{CommitmentID: m.CommitmentID, Commitment: m}
	if in.ReviewAt != nil {
		if out.ReminderID, err = personalReminder(ctx, c.DB, "Review commitment: "+title, *in.ReviewAt, contextRef{Type: "commitment", ID: m.CommitmentID.String()}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// personalReminder sets a personal reminder (the os pack's) to look at what ref names again at at, and
// returns its id.
func personalReminder(ctx context.Context, db executor.DB, title string, at time.Time, ref contextRef) (*string, error) {
	r, err := oshandlers.InsertReminder(ctx, db, ospack.CreateReminderInput{Title: title, RemindAt: at, Domain: ospack.DomainPersonal, ContextRef: &ref})
	if err != nil {
		return nil, err
	}
	return &r.ReminderID, nil
}

type reviewCommitmentsOutput struct {
	Commitments  []commitment `json:"commitments"`
	Count        int          `json:"count"`
	OverdueCount int          `json:"overdue_count"`
	AsOf         time.Time    `json:"as_of"`
}

// reviewCommitments lists commitments (active by default): those overdue for review first, then by review
// date, then the newest.
func reviewCommitments(ctx context.Context, c *executor.Call, in businesspack.ReviewCommitmentsInput) (*reviewCommitmentsOutput, error) {
	if in.Status == "" {
		in.Status = "active"
	}
	out := &reviewCommitmentsOutput{}
	if err := c.DB.QueryRow(ctx, `SELECT now()`).Scan(&out.AsOf); err != nil {
		return nil, err
	}
	list, err := executor.QueryList(ctx, c.DB, scanCommitment, `SELECT `+commitmentColumns+` FROM personal_commitments
		WHERE $1 = 'all' OR status = $1
		ORDER BY status = 'active' AND coalesce(review_at <= now(), false) DESC, status, review_at NULLS LAST, created_at DESC
		LIMIT $2`, in.Status, executor.LimitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	out.Commitments, out.Count = list, len(list)
	for _, m := range list {
		if m.OverdueForReview {
			out.OverdueCount++
		}
	}
	return out, nil
}

type closeCommitmentInput struct {
	CommitmentID string  `json:"commitment_id"`
	Outcome      string  `json:"outcome"`
	Note         *string `json:"note"`
}

type closeCommitmentOutput struct {
	CommitmentID      uuid.UUID  `json:"commitment_id"`
	Commitment        commitment `json:"commitment"`
	AlreadyClosed     bool       `json:"already_closed"`
	RemindersResolved int        `json:"reminders_resolved"`
}

// closeCommitment closes an active commitment with its outcome and dismisses its pending review reminders.
// Closing it again with the same outcome changes nothing; another outcome is a conflict.
func closeCommitment(ctx context.Context, c *executor.Call, in closeCommitmentInput) (*closeCommitmentOutput, error) {
	id, err := executor.RecordID("commitment_id", in.CommitmentID)
	if err != nil {
		return nil, err
	}
	m, err := scanCommitment(c.DB.QueryRow(ctx, `SELECT `+commitmentColumns+` FROM personal_commitments WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "commitment", id)
	}
	if m.Status == "closed" {
		if m.Outcome != nil && *m.Outcome == in.Outcome {
			return &closeCommitmentOutput{CommitmentID: id, Commitment: m, AlreadyClosed: true}, nil
		}
		return nil, executor.Conflict("commitment %s is already closed as %s", id, executor.ValueOr(m.Outcome, "closed"))
	}
	if m, err = scanCommitment(c.DB.QueryRow(ctx, `UPDATE personal_commitments SET status = 'closed', outcome = $2, closing_note = $3,
			closed_at = now(), updated_at = now()
		WHERE id = $1 RETURNING `+commitmentColumns, id, in.Outcome, in.Note)); err != nil {
		return nil, err
	}
	tag, err := c.DB.Exec(ctx, `UPDATE os_reminders SET status = 'dismissed', resolved_at = now(), updated_at = now()
		WHERE status = 'pending' AND context_type = 'commitment' AND context_id = $1`, id.String())
	if err != nil {
		return nil, fmt.Errorf("error dismissing the reminders of commitment %s: %w", id, err)
	}
	return &closeCommitmentOutput{CommitmentID: id, Commitment: m, RemindersResolved: int(tag.RowsAffected())}, nil
}

// Boundaries.

// boundarySetInput is personal.boundary_set's input as the handler reads it: the value is any object,
// stored as given (businesspack.Boundary is the one people say in words).
type boundarySetInput struct {
	businesspack.BoundarySetInput
	Value json.RawMessage `json:"value"`
}

// boundarySetOutput is the boundary memory written, as identity's memory tools return it, and the reminder set.
type boundarySetOutput struct {
	memoryWriteOutput
	ReminderID *string `json:"reminder_id"`
}

// boundarySet makes a personal boundary the current boundary memory of its key (identity's memories; see
// putMemory) and, with remind_at, sets a personal reminder to check on it then.
func boundarySet(ctx context.Context, c *executor.Call, in boundarySetInput) (*boundarySetOutput, error) {
	if in.RemindAt != nil && in.RemindAt.Before(time.Now()) {
		return nil, executor.InvalidField("remind_at", "(%s) is in the past", in.RemindAt.Format(time.RFC3339))
	}
	w, err := putMemory(ctx, c.DB, memoryWrite{Type: "boundary", Key: in.Key, Value: in.Value, Confidence: 1, Source: "user"})
	if err != nil {
		return nil, err
	}
	out := &boundarySetOutput{memoryWriteOutput: *w}
	if in.RemindAt != nil {
		if out.ReminderID, err = personalReminder(ctx, c.DB, "Check boundary: "+w.Memory.Key, *in.RemindAt, contextRef{Type: "memory", ID: w.MemoryID.String()}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Decision support.

// decisionSupportInput is personal.decision_support's input as the handler reads it: each constraint's
// value as given, to tell a limit, a must, a requirement and a list apart.
type decisionSupportInput struct {
	businesspack.DecisionSupportInput
	Constraints map[string]json.RawMessage `json:"constraints"`
}

type decisionSupportOutput struct {
	Analysis decisionAnalysis `json:"analysis"`
}

type decisionAnalysis struct {
	Decision      string               `json:"decision"`
	Options       []decisionOption     `json:"options"`
	Constraints   []decisionConstraint `json:"constraints"`
	Questions     []string             `json:"questions"`
	Boundaries    []decisionBoundary   `json:"boundaries"`
	Commitments   []decisionCommitment `json:"commitments"`
	LatestCheckIn *checkInRecord       `json:"latest_check_in"`
	Cautions      []string             `json:"cautions"`
	NextStep      string               `json:"next_step"`
}

type decisionOption struct {
	Option            string        `json:"option"`
	Checks            []optionCheck `json:"checks"`
	Questions         []string      `json:"questions"`
	RelatedBoundaries []string      `json:"related_boundaries"`
}

// optionCheck is one constraint an option must be checked against, as a question to answer.
type optionCheck struct {
	Constraint string `json:"constraint"`
	Question   string `json:"question"`
}

// decisionConstraint is a constraint as given, and how it is read: a limit (a number), must or avoid (true or
// false), a requirement (text), one_of (a list), or context (anything else).
type decisionConstraint struct {
	Name  string          `json:"name"`
	Kind  string          `json:"kind"`
	Value json.RawMessage `json:"value"`
}

type decisionBoundary struct {
	Source    string          `json:"source"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	MemoryID  *uuid.UUID      `json:"memory_id"`
	Mentioned bool            `json:"mentioned"`
}

type decisionCommitment struct {
	CommitmentID     uuid.UUID  `json:"commitment_id"`
	Title            string     `json:"title"`
	ReviewAt         *time.Time `json:"review_at"`
	OverdueForReview bool       `json:"overdue_for_review"`
	Mentioned        bool       `json:"mentioned"`
}

// decisionSupport structures a decision without an LLM: one entry per option with a question for each
// constraint, general questions, the boundaries and commitments in force (marked where the decision or an
// option mentions them), the latest check-in with the cautions it suggests, and a suggested next step. The
// same input and records give the same analysis.
// Bounds of personal.decision_support's input.
const (
	decisionOptionsMax     = 50
	decisionConstraintsMax = 50
)

func decisionSupport(ctx context.Context, c *executor.Call, in decisionSupportInput) (*decisionSupportOutput, error) {
	a := decisionAnalysis{Decision: strings.TrimSpace(in.Decision), Options: []decisionOption{}, Constraints: []decisionConstraint{},
		Questions: []string{}, Cautions: []string{}}
	if a.Decision == "" {
		return nil, executor.InvalidField("decision", "is blank")
	}
	// Every option is weighed against every constraint: bounded, so one call cannot grow without end.
	if len(in.Options) > decisionOptionsMax || len(in.Constraints) > decisionConstraintsMax {
		return nil, executor.InvalidField("options", "%d options and %d constraints: at most %d and %d can be weighed in one call",
			len(in.Options), len(in.Constraints), decisionOptionsMax, decisionConstraintsMax)
	}
	var options []string
	for i, o := range in.Options {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if slices.ContainsFunc(options, func(x string) bool { return strings.EqualFold(x, o) }) {
			return nil, executor.InvalidField(fmt.Sprintf("options[%d]", i), "%q is listed twice", o)
		}
		options = append(options, o)
	}
	for _, name := range slices.Sorted(maps.Keys(in.Constraints)) {
		a.Constraints = append(a.Constraints, decisionConstraint{Name: name, Kind: constraintKind(in.Constraints[name]), Value: in.Constraints[name]})
	}

	var err error
	if a.Boundaries, err = boundariesInForce(ctx, c); err != nil {
		return nil, err
	}
	if a.Commitments, err = activeCommitments(ctx, c); err != nil {
		return nil, err
	}
	if a.LatestCheckIn, err = latestCheckIn(ctx, c.DB); err != nil {
		return nil, err
	}

	text := append([]string{a.Decision}, options...)
	for i := range a.Boundaries {
		a.Boundaries[i].Mentioned = mentions(text, a.Boundaries[i].Key, string(a.Boundaries[i].Value))
	}
	for i := range a.Commitments {
		a.Commitments[i].Mentioned = mentions(text, a.Commitments[i].Title)
	}
	for _, o := range options {
		opt := decisionOption{Option: o, Checks: []optionCheck{}, RelatedBoundaries: []string{}, Questions: []string{
			fmt.Sprintf("What does %q cost, in money and in time?", o),
			fmt.Sprintf("What is the worst realistic outcome of %q, and could it be undone?", o),
			fmt.Sprintf("Who else does %q affect, and have they had a say?", o),
		}}
		for _, k := range a.Constraints {
			opt.Checks = append(opt.Checks, optionCheck{Constraint: k.Name, Question: constraintQuestion(o, k)})
		}
		for _, b := range a.Boundaries {
			if mentions([]string{o}, b.Key, string(b.Value)) {
				opt.RelatedBoundaries = append(opt.RelatedBoundaries, b.Key)
			}
		}
		a.Options = append(a.Options, opt)
	}

	switch len(options) {
	case 0:
		a.Questions = append(a.Questions, "What are the options? Name at least two, doing nothing included.")
	case 1:
		a.Questions = append(a.Questions, fmt.Sprintf("What is the alternative to %q? Doing nothing counts.", options[0]))
	}
	if len(a.Constraints) == 0 {
		a.Questions = append(a.Questions, "What must the choice respect: a budget, a deadline, people it affects, your health?")
	}
	a.Questions = append(a.Questions, "When does this have to be decided, and what happens if it waits?")
	a.Cautions = checkInCautions(a.LatestCheckIn, time.Now())
	for _, m := range a.Commitments {
		if m.Mentioned {
			a.Cautions = append(a.Cautions, fmt.Sprintf("The decision touches your commitment %q: check that the choice keeps it.", m.Title))
		}
	}
	a.NextStep = nextStep(a, options)
	return &decisionSupportOutput{Analysis: a}, nil
}

func constraintKind(v json.RawMessage) string {
	var x any
	if err := decodeJSON(v, &x); err != nil {
		return "context"
	}
	switch t := x.(type) {
	case json.Number:
		return "limit"
	case bool:
		if t {
			return "must"
		}
		return "avoid"
	case string:
		return "requirement"
	case []any:
		return "one_of"
	default:
		return "context"
	}
}

func constraintQuestion(option string, k decisionConstraint) string {
	var x any
	_ = decodeJSON(k.Value, &x)
	switch k.Kind {
	case "limit":
		return fmt.Sprintf("Does %q stay within %s = %v?", option, k.Name, x)
	case "must":
		return fmt.Sprintf("Does %q satisfy %q?", option, k.Name)
	case "avoid":
		return fmt.Sprintf("Does %q avoid %q?", option, k.Name)
	case "requirement":
		return fmt.Sprintf("Does %q meet %s: %v?", option, k.Name, x)
	case "one_of":
		parts := []string{}
		for _, v := range x.([]any) {
			parts = append(parts, fmt.Sprint(v))
		}
		return fmt.Sprintf("Is %q one of the allowed %s (%s)?", option, k.Name, strings.Join(parts, ", "))
	default:
		return fmt.Sprintf("How does %q measure against %s (%s)?", option, k.Name, string(k.Value))
	}
}

// checkInCautions are what a recent check-in suggests about deciding now.
func checkInCautions(ci *checkInRecord, now time.Time) []string {
	cautions := []string{}
	if ci == nil || now.Sub(ci.RecordedAt) > checkInFreshFor {
		return cautions
	}
	if ci.Stress == "high" {
		cautions = append(cautions, "Stress was high at the latest check-in: if the decision can wait, make it after a rest.")
	}
	if ci.Energy == "low" {
		cautions = append(cautions, "Energy was low at the latest check-in: prefer options that ask less of you now.")
	}
	if ci.Focus == "scattered" {
		cautions = append(cautions, "Focus was scattered at the latest check-in: write the options down and come back to them.")
	}
	return cautions
}

func nextStep(a decisionAnalysis, options []string) string {
	switch {
	case len(options) == 0:
		return "List the options, at least two and doing nothing included, then run decision support again."
	case len(options) == 1:
		return fmt.Sprintf("Name at least one alternative to %q, then check both against the same questions.", options[0])
	}
	for _, o := range a.Options {
		if len(o.RelatedBoundaries) > 0 {
			return fmt.Sprintf("Check %q against your boundary %q first: an option that crosses a boundary is out.", o.Option, o.RelatedBoundaries[0])
		}
	}
	switch {
	case len(a.Constraints) == 0:
		return "Write down what the choice must respect as constraints (budget, deadline, who it affects), then compare the options against them."
	case len(a.Cautions) > 0:
		return "Answer each option's checks, then sleep on it before choosing: " + strings.ToLower(a.Cautions[0][:1]) + a.Cautions[0][1:]
	}
	return "Answer each option's checks; drop any option that fails one, and choose among the rest."
}

// mentions reports whether one of the texts shares a significant word (four letters or more) with one of
// the subjects.
func mentions(texts []string, subjects ...string) bool {
	words := map[string]bool{}
	for _, t := range texts {
		for _, w := range significantWords(t) {
			words[w] = true
		}
	}
	for _, s := range subjects {
		for _, w := range significantWords(s) {
			if words[w] {
				return true
			}
		}
	}
	return false
}

func significantWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) >= 4 {
			out = append(out, w)
		}
	}
	return out
}

// boundariesInForce are the current boundary memories and the self-model's boundaries, by key.
func boundariesInForce(ctx context.Context, c *executor.Call) ([]decisionBoundary, error) {
	list, err := executor.QueryList(ctx, c.DB, func(r pgx.Row) (decisionBoundary, error) {
		var b decisionBoundary
		return b, r.Scan(&b.Source, &b.Key, &b.Value, &b.MemoryID)
	}, `
		SELECT 'memory', key, value, id FROM identity_memories WHERE memory_type = 'boundary' AND valid_to IS NULL
		UNION ALL
		SELECT 'self_model', b.key, b.value, NULL FROM identity_self_model, jsonb_each(boundaries) b
		ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("error reading boundaries: %w", err)
	}
	return list, nil
}

// activeCommitments are the active commitments, those due for review first.
func activeCommitments(ctx context.Context, c *executor.Call) ([]decisionCommitment, error) {
	list, err := executor.QueryList(ctx, c.DB, func(r pgx.Row) (decisionCommitment, error) {
		var m decisionCommitment
		return m, r.Scan(&m.CommitmentID, &m.Title, &m.ReviewAt, &m.OverdueForReview)
	}, `SELECT id, title, review_at, coalesce(review_at <= now(), false) FROM personal_commitments
		WHERE status = 'active' ORDER BY review_at NULLS LAST, created_at LIMIT 20`)
	if err != nil {
		return nil, fmt.Errorf("error reading commitments: %w", err)
	}
	return list, nil
}
