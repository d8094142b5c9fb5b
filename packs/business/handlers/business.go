// Package businesshandlers holds the handlers of GEM's business pack: the tools a roofing or trades business runs
// on (leads, customers and sites, inspections, quotes, jobs, invoices, communications, calendar, media and
// marketing, and the owner's identity and personal tools). The os pack (notes, tasks, reminders, the state
// snapshot, the audit log, health) comes before it: this pack gives that pack's tools its records, its parts
// of the snapshot and its providers, and schedules reminders through it: RegisterWithOS adds the two packs'
// handlers together. Every handler writes only through the call's transaction, returns not_found for a
// missing row and conflict when the current state refuses a change, and returns a result that matches its
// tool's output schema. docs/business-pack.md describes the tools and their rules.
package businesshandlers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // the business time zone must resolve on hosts without a zoneinfo database

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/llmconfig"
	businesspack "github.com/gemhq/gem/packs/business"
	ospack "github.com/gemhq/gem/packs/os"
	oshandlers "github.com/gemhq/gem/packs/os/handlers"
	"github.com/gemhq/gem/registry/phone"
	"github.com/google/uuid"
)

// RegisterWithOS adds the os pack's handlers, with what the business pack gives them (forOS), and the
// business pack's: the executor's Main reads both configurations from the environment once and reports
// their Problems at start; tests build them. The business's time zone is the os pack's (osCfg.TimeZone,
// GEM_BUSINESS_TIMEZONE), whatever cfg.TimeZone says: one setting, one owner.
func RegisterWithOS(h executor.Handlers, osCfg ospack.Config, cfg businesspack.Config) {
	cfg.TimeZone = osCfg.TimeZone
	oshandlers.Register(h, osCfg, oshandlers.Packs{forOS(cfg)})
	register(h, cfg)
}

// register adds the business pack's handlers alone, with its configuration.
func register(h executor.Handlers, cfg businesspack.Config) {
	p := &pack{cfg: cfg.WithDefaults()}
	p.loc, p.locErr = p.cfg.Location()
	p.region, p.regionErr = p.cfg.ResolvePhoneRegion()
	p.files = filestore.New(p.cfg.FileStore)
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

// records are the business pack's records a context_ref may name (of an os task, note or reminder), and
// their tables: a reference to one that does not exist is refused.
var records = map[string]string{
	"lead": "leads", "entity": "entities", "customer": "entities", "supplier": "entities", "site": "entities",
	"inspection": "inspections", "quote": "quotes", "job": "jobs", "invoice": "invoices", "media": "media_assets",
	"commitment": "personal_commitments", "memory": "identity_memories", "checkin": "personal_checkins",
}

// forOS is what the business pack gives the os pack's tools (oshandlers.Register), configured by cfg as register
// is: its records; its parts of the state snapshot (the business's pipeline, work, money and calendar; the
// owner's check-ins, commitments and boundaries); and its outside providers, for the health check.
func forOS(cfg businesspack.Config) oshandlers.Pack {
	cfg = cfg.WithDefaults()
	return oshandlers.Pack{
		Name:    "business",
		Records: records,
		Sections: []oshandlers.Section{
			{Domain: ospack.DomainBusiness, State: businessState},
			{Domain: ospack.DomainPersonal, State: personalState},
		},
		Providers: func() []ospack.ProviderHealth { return providers(cfg) },
	}
}

// providers lists the outside providers of the configuration and what each one lacks, for the os pack's
// health check (forOS).
func providers(c businesspack.Config) []ospack.ProviderHealth {
	errText := func(err error) *string {
		if err == nil {
			return nil
		}
		s := err.Error()
		return &s
	}
	sms := ospack.ProviderHealth{Name: "sms", RequiredEnv: businesspack.SMSRequiredEnv, Missing: c.SMS.Missing()}
	if len(sms.Missing) == 0 {
		sms.Error = errText(c.SMS.Validate())
	}
	email := ospack.ProviderHealth{Name: "email", RequiredEnv: businesspack.EmailRequiredEnv, Missing: c.Email.Missing()}
	if len(email.Missing) == 0 {
		_, err := parseSMTP(c.Email)
		email.Error = errText(err)
	}
	llm := ospack.ProviderHealth{Name: "llm", RequiredEnv: []string{llmconfig.EnvModel, llmconfig.EnvAPIKey}, Missing: c.LLM.Missing(),
		Error: errText(c.LLMError)}
	return []ospack.ProviderHealth{sms, email, llm}
}

// pack holds what the handlers that depend on configuration need.
type pack struct {
	cfg    businesspack.Config
	loc    *time.Location
	locErr error
	// region is the region phone numbers are read in (businesspack.Config.ResolvePhoneRegion).
	region    string
	regionErr error
	files     *filestore.Store
}

// today is the business's current date, in its time zone.
func (p *pack) today() (businesspack.Date, error) {
	if p.locErr != nil {
		return businesspack.Date{}, oshandlers.TimeZoneUnusable(p.locErr)
	}
	return businesspack.DateOf(time.Now().In(p.loc)), nil
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

// nullableRecordID reads an id that may be null or empty (none); any other text that is not a UUID names no
// record (executor.RecordID).
func nullableRecordID(field string, s *string) (*uuid.UUID, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	id, err := executor.RecordID(field, *s)
	if err != nil {
		return nil, err
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

// pipelineRank is a stage's place in the lead pipeline (businesspack.LeadStages' order); lost is off it, as
// low as new.
func pipelineRank(stage string) int {
	if stage == businesspack.StageLost {
		return 0
	}
	return max(slices.Index(businesspack.LeadStages, stage), 0)
}

// advanceLead moves a lead forward along the pipeline to stage as work on it progresses. It never moves a
// lead back and leaves lost leads alone, except that winning (an accepted quote) wins a lost lead too. It
// returns the stage before and after.
func advanceLead(ctx context.Context, db executor.DB, leadID string, stage string) (before, after string, err error) {
	if err := db.QueryRow(ctx, `SELECT stage FROM leads WHERE id = $1 FOR UPDATE`, leadID).Scan(&before); err != nil {
		return "", "", executor.NotFoundIfNoRows(err, "lead", leadID)
	}
	forward := before != businesspack.StageLost && pipelineRank(stage) > pipelineRank(before)
	if !forward && !(stage == businesspack.StageWon && before == businesspack.StageLost) {
		return before, before, nil
	}
	if _, err := db.Exec(ctx, `UPDATE leads SET stage = $2, stage_reason = NULL, lost_reason_code = NULL, updated_at = now()
		WHERE id = $1`, leadID, stage); err != nil {
		return "", "", fmt.Errorf("error moving lead %s to %s: %w", leadID, stage, err)
	}
	return before, stage, nil
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

// givenDate is d, or nil when the input left it out (the zero Date): NULL in a column, null in a result.
func givenDate(d businesspack.Date) *businesspack.Date {
	if d.IsZero() {
		return nil
	}
	return &d
}

// dateOrEmpty is the day as YYYY-MM-DD, or "" for none.
func dateOrEmpty(d *businesspack.Date) string {
	if d == nil {
		return ""
	}
	return d.String()
}
