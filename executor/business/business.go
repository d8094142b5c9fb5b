// Package business holds the handlers of GEM's business pack: the tools a roofing or trades business runs
// on (notes, tasks, reminders, leads, customers and sites, inspections, quotes, jobs, invoices,
// communications and media). Every handler writes only through the call's transaction, returns not_found
// for a missing row and conflict when the current state refuses a change, and returns a result that matches
// its tool's output schema. docs/business-pack.md describes the tools and their rules.
package business

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry/phone"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Register adds the business pack's handlers with its configuration: the executor's Main reads it from the
// environment once (ConfigFromEnv) and reports its Problems at start; tests build one.
func Register(h executor.Handlers, cfg Config) {
	p := &pack{cfg: cfg.WithDefaults()}
	p.loc, p.locErr = p.cfg.location()
	p.region, p.regionErr = p.cfg.ResolvePhoneRegion()
	p.files = filestore.New(p.cfg.FileStore)
	registerOS(h, p)
	registerReminders(h)
	registerAudit(h)
	registerSnapshots(h, p)
	registerRollback(h)
	registerIdentity(h)
	registerPersonal(h)
	registerLeads(h, p)
	registerEntity(h, p)
	registerInspection(h, p)
	registerQuote(h, p)
	registerJob(h, p)
	registerInvoice(h, p)
	registerFinance(h, p)
	registerComms(h, p)
	registerCalendar(h, p)
	registerMedia(h, p)
	registerMarketing(h, p)
}

// pack holds what the handlers that depend on configuration need.
type pack struct {
	cfg    Config
	loc    *time.Location
	locErr error
	// region is the region phone numbers are read in (Config.phoneRegion).
	region    string
	regionErr error
	files     *filestore.Store
}

// today is the business's current date, in its time zone.
func (p *pack) today() (civilDate, error) {
	if p.locErr != nil {
		return civilDate{}, executor.NotConfigured(p.locErr.Error(), []string{EnvTimeZone},
			"Set "+EnvTimeZone+" to an IANA time zone such as Australia/Sydney, or unset it for the default.")
	}
	return dateOf(time.Now().In(p.loc)), nil
}

// readPhone reads a phone number as people type it (phone.Parse, in the business's region). One that is not
// a number is a validation_error saying why; field, when not "", names the input it came from.
func (p *pack) readPhone(field, typed string) (phone.Number, error) {
	if p.regionErr != nil {
		return phone.Number{}, executor.NotConfigured(p.regionErr.Error(), []string{phone.EnvRegion},
			"Set "+phone.EnvRegion+" to a two-letter region such as AU, NZ or GB (or unset it for AU), and restart the executor.")
	}
	n, err := phone.Parse(typed, p.region)
	switch {
	case err != nil && field != "":
		return phone.Number{}, inputError(field, "%s", err.Error())
	case err != nil:
		return phone.Number{}, executor.Invalid("%s", err.Error())
	}
	return n, nil
}

// notFoundIfNoRows maps pgx.ErrNoRows to a not_found receipt naming what is missing; other errors pass
// through (the executor chooses the receipt code of a database error).
func notFoundIfNoRows(err error, what string, id any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return executor.NotFound("%s %v does not exist", what, id)
	}
	return err
}

// optional distinguishes a field that is absent from one set to null.
type optional[T any] struct {
	Set   bool
	Value *T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

func nullableUUID(s *string) (*uuid.UUID, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	id, err := uuid.Parse(*s)
	if err != nil {
		return nil, executor.Invalid("%q is not a UUID", *s)
	}
	return &id, nil
}

func parseTime(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, executor.Invalid("%q is not an RFC 3339 date-time", *s)
	}
	return &t, nil
}

// likeEscaper escapes the characters LIKE and ILIKE give a meaning (with the default escape character).
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// likeEscape makes s match itself in a LIKE or ILIKE pattern: % and _ in input match only % and _.
func likeEscape(s string) string { return likeEscaper.Replace(s) }

// likeContains is the LIKE or ILIKE pattern of a text that contains s.
func likeContains(s string) string { return "%" + likeEscape(s) + "%" }

func limitOr(n int, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// leadStageOrder is the order of the lead pipeline; lost is off it.
var leadStageOrder = map[string]int{"new": 0, "contacted": 1, "inspection_scheduled": 2, "inspected": 3, "quoted": 4, "won": 5}

// advanceLead moves a lead forward along the pipeline to stage as work on it progresses. It never moves a
// lead back and leaves lost leads alone, except that winning (an accepted quote) wins a lost lead too. It
// returns the stage before and after.
func advanceLead(ctx context.Context, db executor.DB, leadID uuid.UUID, stage string) (before, after string, err error) {
	if err := db.QueryRow(ctx, `SELECT stage FROM leads WHERE id = $1 FOR UPDATE`, leadID).Scan(&before); err != nil {
		return "", "", notFoundIfNoRows(err, "lead", leadID)
	}
	forward := before != "lost" && leadStageOrder[stage] > leadStageOrder[before]
	if !forward && !(stage == "won" && before == "lost") {
		return before, before, nil
	}
	if _, err := db.Exec(ctx, `UPDATE leads SET stage = $2, stage_reason = NULL, lost_reason_code = NULL, updated_at = now()
		WHERE id = $1`, leadID, stage); err != nil {
		return "", "", fmt.Errorf("error moving lead %s to %s: %w", leadID, stage, err)
	}
	return before, stage, nil
}

// queryList runs a query and scans every row with scan; it never returns a nil slice (JSON [] not null).
func queryList[T any](ctx context.Context, c *executor.Call, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := c.DB.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []T{}
	}
	return list, nil
}

// checkStoredRef refuses a reference into GEM's file store (gemfs://...) that names no stored file, with
// not_found naming field; other references (URLs, bucket paths) are the caller's to keep.
func (p *pack) checkStoredRef(field, ref string) error {
	ref = strings.TrimSpace(ref)
	if !isFileStoreRef(ref) {
		return nil
	}
	if _, err := p.files.Path(ref); err != nil {
		return executor.NotFound("%s: %s is not in GEM's file store", field, ref)
	}
	return nil
}
