package oshandlers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// TestEveryToolHasAHandler: Register adds a handler for each of the pack's tools (ospack.Tools), and for no
// other tool. (The rules and sentences are checked beside them, in packs/os/plan.)
func TestEveryToolHasAHandler(t *testing.T) {
	h := executor.Handlers{}
	Register(h, ospack.Config{}, nil)
	require.ElementsMatch(t, ospack.Tools, h.Names())
}

// TestRegisterRefusesTwoOwners: a record type two packs declare, or a section of no domain, stops the
// executor at start-up, naming the packs.
func TestRegisterRefusesTwoOwners(t *testing.T) {
	require.PanicsWithValue(t, `oshandlers: the record type "task" is declared by the os pack and the business pack`, func() {
		Register(executor.Handlers{}, ospack.Config{}, Packs{{Name: "business", Records: map[string]string{"task": "jobs"}}})
	})
	state := func(context.Context, executor.DB, time.Time, string) (json.RawMessage, error) { return nil, nil }
	require.Panics(t, func() {
		Register(executor.Handlers{}, ospack.Config{}, Packs{{Name: "business", Sections: []Section{{Domain: ospack.DomainBoth, State: state}}}})
	})
}

func TestNewPackGathersThePacks(t *testing.T) {
	state := func(context.Context, executor.DB, time.Time, string) (json.RawMessage, error) { return nil, nil }
	p := newPack(ospack.Config{TimeZone: "Mars/Olympus"}, Packs{
		{Name: "business", Records: map[string]string{"lead": "leads"},
			Sections: []Section{{Domain: ospack.DomainPersonal, State: state}},
			Providers: func() []ospack.ProviderHealth {
				return []ospack.ProviderHealth{{Name: "sms", Missing: []string{"X"}}, {Name: "llm"}}
			}},
		{Name: "other", Providers: func() []ospack.ProviderHealth {
			e := "bad URL"
			return []ospack.ProviderHealth{{Name: "ftp", Error: &e}}
		}},
	})
	require.Equal(t, records{"task": "os_tasks", "note": "os_notes", "reminder": "os_reminders", "lead": "leads"}, p.records)
	require.Len(t, p.sections[ospack.DomainBusiness], 1, "the os pack's own")
	require.Len(t, p.sections[ospack.DomainPersonal], 2, "the os pack's, then the business pack's")

	providers := p.providerHealth()
	require.Len(t, providers, 3)
	require.Equal(t, "sms", providers[0].Name)
	require.False(t, providers[0].Configured)
	require.Equal(t, []string{}, providers[1].Missing, "none missing is [], not null")
	require.True(t, providers[1].Configured)
	require.False(t, providers[2].Configured, "configured but unusable")

	_, err := p.today()
	var e *executor.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, registry.CodeNotConfigured, e.Code)
	require.Contains(t, e.Message, `GEM_BUSINESS_TIMEZONE="Mars/Olympus"`)

	p = newPack(ospack.Config{TimeZone: "Australia/Perth"}, nil)
	today, err := p.today()
	require.NoError(t, err)
	perth, _ := time.LoadLocation("Australia/Perth")
	require.Contains(t, []string{time.Now().In(perth).Format(time.DateOnly), time.Now().Add(time.Minute).In(perth).Format(time.DateOnly)}, today)
}

func TestNormalizeRef(t *testing.T) {
	ref, err := normalizeRef("context_ref", &ospack.Ref{Type: " Lead ", ID: " 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 "})
	require.NoError(t, err)
	require.Equal(t, &ospack.Ref{Type: "lead", ID: "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}, ref)
	for _, empty := range []*ospack.Ref{nil, {}, {Type: " ", ID: ""}} {
		ref, err = normalizeRef("context_ref", empty)
		require.NoError(t, err)
		require.Nil(t, ref)
	}
	_, err = normalizeRef("entity_refs[1]", &ospack.Ref{Type: "lead"})
	require.EqualError(t, err, "validation_error: entity_refs[1] needs both a type and an id")

	id := "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"

	typ, rid := RefColumns(&ospack.Ref{Type: "job", ID: id})
	require.Equal(t, &ospack.Ref{Type: "job", ID: id}, RefFromColumns(typ, rid))
	typ, rid = RefColumns(nil)
	require.Nil(t, RefFromColumns(typ, rid))
}

// TestParseTaskPatch: each patch key is read as its field's type; null clears a nullable field, a key left
// out keeps it, and a key or value the task cannot take is a validation_error naming it.
func TestParseTaskPatch(t *testing.T) {
	parse := func(s string) (taskPatch, error) {
		var patch map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s), &patch))
		return parseTaskPatch(patch)
	}
	p, err := parse(`{"title": "  Call Ann ", "description": null, "due_at": "2026-11-20T17:00:00Z", "context_ref": {"type": "Lead", "id": "x"}}`)
	require.NoError(t, err)
	require.Equal(t, "Call Ann", *p.title)
	require.True(t, p.description.Set)
	require.Nil(t, p.description.Value)
	require.Equal(t, time.Date(2026, 11, 20, 17, 0, 0, 0, time.UTC), *p.dueAt.Value)
	require.Equal(t, &ospack.Ref{Type: "lead", ID: "x"}, p.contextRef.Value)
	require.False(t, p.domain != nil || p.priority != nil, "left out")

	p, err = parse(`{"context_ref": null, "due_at": null}`)
	require.NoError(t, err)
	require.True(t, p.contextRef.Set && p.dueAt.Set)
	require.Nil(t, p.contextRef.Value)

	for patch, field := range map[string]string{
		`{"title": ""}`:                     "patch.title",
		`{"title": null}`:                   "patch.title",
		`{"priority": "urgent"}`:            "patch.priority",
		`{"domain": "work"}`:                "patch.domain",
		`{"due_at": "friday"}`:              "patch.due_at",
		`{"due_at": 3}`:                     "patch.due_at",
		`{"description": 3}`:                "patch.description",
		`{"context_ref": {"type": "lead"}}`: "patch.context_ref",
		`{"context_ref": {"kind": "lead"}}`: "patch.context_ref",
		`{"status": "done"}`:                "patch.status",
	} {
		_, err := parse(patch)
		var e *executor.Error
		require.ErrorAs(t, err, &e, patch)
		require.Equal(t, registry.CodeValidation, e.Code, patch)
		require.Equal(t, map[string]any{"field": field}, e.Details, patch)
	}
}

func TestNormalizeNoteTags(t *testing.T) {
	require.Equal(t, []string{"roof", "quote"}, normalizeNoteTags([]string{" roof", "", "quote", "roof ", "  "}))
	require.Equal(t, []string{}, normalizeNoteTags(nil))
}
