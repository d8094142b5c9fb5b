// Package oshandlers is the os pack's side in the executor: the handlers of its tools (notes, tasks, reminders,
// the state snapshot, the audit log and its rollback, health), typed against the pack's contract (ospack).
//
// The os pack comes first: it knows no other pack's tables or settings. What a later pack adds to the os
// tools — the records a context_ref may name, its parts of the state snapshot, the outside providers the
// health check reports — it gives as a Pack, which the executor's Main hands to Register. A later pack may
// use this package (InsertReminder); this package uses none.
package oshandlers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	_ "time/tzdata" // the business's time zone must resolve on hosts without a zoneinfo database

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
)

// Pack is what a pack registered after the os pack gives the os pack's tools.
type Pack struct {
	// Name is the pack's name, as errors name it.
	Name string
	// Records are the context_ref types of the records the pack keeps, each with its table (whose id is a
	// uuid): a task, note or reminder about one that does not exist is refused (not_found). References of
	// types no pack declares are kept as given.
	Records map[string]string
	// Sections are the pack's parts of the state snapshot.
	Sections []Section
	// Providers lists the outside providers the pack's tools need, for os.health_check, which calls it on
	// each check; nil for none. Configured is the health check's to work out (left false here).
	Providers func() []ospack.ProviderHealth
}

// Packs are the packs registered after the os pack, in the registry's order.
type Packs []Pack

// Section is a pack's part of one domain's state in the state snapshot.
type Section struct {
	// Domain is the part of the state the section joins: ospack.DomainBusiness or ospack.DomainPersonal.
	Domain string
	// State reads the section in the call's transaction: a JSON object whose keys join the domain's state
	// (no two sections of a domain share a key). since is where the snapshot's recent activity starts, today
	// the business's date (YYYY-MM-DD) in its time zone.
	State func(ctx context.Context, db executor.DB, since time.Time, today string) (json.RawMessage, error)
}

// Register adds the os pack's handlers, configured by cfg (the executor's Main reads it from the environment
// once, ospack.ConfigFromEnv, and reports its Problems at start), with what the later packs give (with). A
// record type two packs declare, or a section of no domain, is a programming error: it panics at start-up.
func Register(h executor.Handlers, cfg ospack.Config, with Packs) {
	p := newPack(cfg, with)
	h.Func(ospack.HealthCheck, executor.Typed(p.healthCheck))
	h.Func(ospack.GetStateSnapshot, executor.Typed(p.getStateSnapshot))
	h.Func(ospack.RefreshStateSnapshot, executor.Typed(p.refreshStateSnapshot))
	h.Func(ospack.CreateNote, executor.Typed(p.createNote))
	h.Func(ospack.SearchNotes, executor.Typed(searchNotes))
	h.Func(ospack.CreateTask, executor.Typed(p.createTask))
	h.Func(ospack.UpdateTask, executor.Typed(p.updateTask))
	h.Func(ospack.CompleteTask, executor.Typed(completeTask))
	h.Func(ospack.DeferTask, executor.Typed(deferTask))
	h.Func(ospack.ListTasks, executor.Typed(listTasks))
	h.Func(ospack.CreateReminder, executor.Typed(p.createReminder))
	h.Func(ospack.AuditLogSearch, executor.Typed(searchAuditLog))
	h.Func(ospack.RollbackLastAction, executor.Typed(rollbackCall))
	h.Func(ospack.ListReminders, executor.Typed(listReminders))
	h.Func(ospack.CompleteReminder, executor.Typed(resolveReminder("done")))
	h.Func(ospack.DismissReminder, executor.Typed(resolveReminder("dismissed")))
}

// pack holds what the handlers that depend on the configuration or on the other packs need.
type pack struct {
	cfg    ospack.Config
	loc    *time.Location
	locErr error
	// records are every pack's record types (records.go).
	records records
	// sections are the snapshot's sections of each domain, the os pack's first.
	sections map[string][]Section
	// providers are the packs' lists of outside providers, in the packs' order.
	providers []func() []ospack.ProviderHealth
}

func newPack(cfg ospack.Config, with Packs) *pack {
	p := &pack{cfg: cfg.WithDefaults(), records: records{}, sections: map[string][]Section{}}
	p.loc, p.locErr = ospack.LoadTimeZone(p.cfg.TimeZone)
	all := append(Packs{{Name: "os", Records: ownRecords, Sections: ownSections}}, with...)
	owner := map[string]string{}
	for _, pk := range all {
		for typ, table := range pk.Records {
			if other, dup := owner[typ]; dup {
				panic(fmt.Sprintf("oshandlers: the record type %q is declared by the %s pack and the %s pack", typ, other, pk.Name))
			}
			owner[typ], p.records[typ] = pk.Name, table
		}
		for _, s := range pk.Sections {
			if !slices.Contains([]string{ospack.DomainBusiness, ospack.DomainPersonal}, s.Domain) || s.State == nil {
				panic(fmt.Sprintf("oshandlers: the %s pack's snapshot section of domain %q is not one of business or personal with a State", pk.Name, s.Domain))
			}
			p.sections[s.Domain] = append(p.sections[s.Domain], s)
		}
		if pk.Providers != nil {
			p.providers = append(p.providers, pk.Providers)
		}
	}
	return p
}

// today is the business's current date (YYYY-MM-DD), in its time zone.
func (p *pack) today() (string, error) {
	if p.locErr != nil {
		return "", TimeZoneUnusable(p.locErr)
	}
	return time.Now().In(p.loc).Format(time.DateOnly), nil
}

// TimeZoneUnusable is the not_configured error of a tool that needs the business's date when its time zone
// (ospack.EnvTimeZone) cannot be used: err is ospack.LoadTimeZone's.
func TimeZoneUnusable(err error) error {
	return executor.NotConfigured(err.Error(), []string{ospack.EnvTimeZone},
		"Set "+ospack.EnvTimeZone+" to an IANA time zone such as Australia/Sydney, or unset it for the default.")
}

// domainFilterSQL is the condition "the row belongs to the domain $n": business and personal also match rows
// of both; both (or no domain) matches every row.
func domainFilterSQL(column string, param int) string {
	return fmt.Sprintf("($%[2]d = '' OR $%[2]d = 'both' OR %[1]s = $%[2]d OR %[1]s = 'both')", column, param)
}
