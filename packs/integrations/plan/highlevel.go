package integrationsplan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	ospack "github.com/gemhq/gem/packs/os"

	"github.com/gemhq/gem/brain/highlevel"
)

// HighLevel plans what HighLevel's webhook events make (the brain's highlevel.Planner): a contact becomes
// a lead or updates its entity, an appointment a calendar event, a stage move in the followed pipeline a
// lead's stage move, a task a task and a note a note — each tied to the contact's lead when GEM has it.
// docs/integrations.md has the mapping.
type HighLevel struct {
	// Pipeline is the pipeline whose stage moves are followed, and how its stages map to GEM's.
	Pipeline integrationspack.HighLevelPipeline
}

// Tools are the tools events become calls of.
func (HighLevel) Tools() []string {
	return []string{businesspack.UpdateEntity, businesspack.CreateLead, businesspack.CreateEvent, businesspack.UpdateLeadStage,
		ospack.CreateTask, ospack.CreateNote}
}

// Plan is the call an event makes, or why it makes none.
func (h HighLevel) Plan(ctx context.Context, ev highlevel.Event, records highlevel.Records) (highlevel.Call, error) {
	switch ev.Type {
	case "ContactCreate", "ContactUpdate":
		return planContact(ctx, ev, records)
	case "AppointmentCreate":
		return planAppointment(ctx, ev, records)
	case "OpportunityStageUpdate":
		return h.planStageMove(ctx, ev, records)
	case "TaskCreate":
		if strings.TrimSpace(ev.Title) == "" {
			return ignore("task %s has no title", ev.ID), nil
		}
		in := ospack.CreateTaskInput{Title: truncate(ev.Title, 200), Domain: ospack.DomainBusiness}
		if b := strings.TrimSpace(ev.Body); b != "" {
			in.Description = &b
		}
		if due, ok := parseEventTime(ev.DueDate); ok {
			due = due.Truncate(time.Second)
			in.DueAt = &due
		}
		lead, err := records.Lead(ctx, ev.ContactID, "")
		if err != nil {
			return highlevel.Call{}, err
		}
		if lead != "" {
			in.ContextRef = &ospack.Ref{Type: "lead", ID: lead}
		}
		return highlevel.Call{Tool: ospack.CreateTask, Input: in}, nil
	case "NoteCreate":
		if strings.TrimSpace(ev.Body) == "" {
			return ignore("note %s is empty", ev.ID), nil
		}
		in := ospack.CreateNoteInput{Domain: ospack.DomainBusiness, Content: ev.Body,
			Title: truncate("HighLevel note: "+strings.SplitN(strings.TrimSpace(ev.Body), "\n", 2)[0], 140)}
		lead, err := records.Lead(ctx, ev.ContactID, "")
		if err != nil {
			return highlevel.Call{}, err
		}
		if lead != "" {
			in.EntityRefs = []ospack.Ref{{Type: "lead", ID: lead}}
		}
		return highlevel.Call{Tool: ospack.CreateNote, Input: in}, nil
	}
	return ignore("GEM does not act on %s events", ev.Type), nil
}

// planContact: a new contact with a phone number is a new lead; an update of a contact that is a lead
// patches the lead's entity.
func planContact(ctx context.Context, ev highlevel.Event, records highlevel.Records) (highlevel.Call, error) {
	lead, err := records.Lead(ctx, ev.ID, ev.Phone)
	if err != nil {
		return highlevel.Call{}, err
	}
	if lead != "" {
		if ev.Type == "ContactCreate" {
			return ignore("contact %s is already lead %s", ev.ID, lead), nil
		}
		entity, err := records.LeadEntity(ctx, lead)
		if err != nil {
			return highlevel.Call{}, err
		}
		if entity == "" {
			return ignore("lead %s has no entity to update; %s brings the lead up to date", lead, integrationspack.HighLevelSyncContacts), nil
		}
		patch := businesspack.EntityPatch{Name: contactName(ev)}
		contact := businesspack.Contact{Phone: strings.TrimSpace(ev.Phone), Email: strings.TrimSpace(ev.Email),
			Address: strings.TrimSpace(ev.Address1), Suburb: strings.TrimSpace(ev.City), Postcode: strings.TrimSpace(ev.PostalCode),
			State: strings.TrimSpace(ev.State)}
		if contact != (businesspack.Contact{}) {
			patch.Contact = &contact
		}
		return highlevel.Call{Tool: businesspack.UpdateEntity, Input: businesspack.UpdateEntityInput{EntityID: entity, Patch: patch}}, nil
	}
	if strings.TrimSpace(ev.Phone) == "" {
		return ignore("contact %s has no phone number, which a GEM lead needs", ev.ID), nil
	}
	return highlevel.Call{Tool: businesspack.CreateLead, Input: businesspack.LeadsCreateInput{Name: contactName(ev),
		Phone: strings.TrimSpace(ev.Phone), Suburb: or(strings.TrimSpace(ev.City), "not given"), Email: strings.TrimSpace(ev.Email),
		Source: businesspack.SourceOther, Notes: "From HighLevel contact " + ev.ID}}, nil
}

// planAppointment: an appointment is a calendar event (an hour long when its end cannot be read).
func planAppointment(ctx context.Context, ev highlevel.Event, records highlevel.Records) (highlevel.Call, error) {
	a := ev.Appointment
	if a == nil {
		// The flat form: the appointment's fields at the top.
		a = &highlevel.Appointment{ID: ev.ID, ContactID: ev.ContactID, Title: ev.Title, StartTime: ev.StartTime, EndTime: ev.EndTime, Address: ev.Address}
	}
	start, ok := parseEventTime(a.StartTime)
	if !ok {
		return ignore("appointment %s has no start time GEM can read (%q)", a.ID, a.StartTime), nil
	}
	end, ok := parseEventTime(a.EndTime)
	if !ok || !end.After(start) {
		end = start.Add(time.Hour)
	}
	in := businesspack.CreateEventInput{Title: truncate(or(a.Title, "HighLevel appointment"), 200), StartAt: start.Truncate(time.Second), EndAt: end.Truncate(time.Second)}
	if where := strings.TrimSpace(a.Address); where != "" {
		in.Location = &where
	}
	lead, err := records.Lead(ctx, a.ContactID, "")
	if err != nil {
		return highlevel.Call{}, err
	}
	if lead != "" {
		in.ContextRef = &businesspack.Ref{Type: "lead", ID: lead}
	}
	return highlevel.Call{Tool: businesspack.CreateEvent, Input: in}, nil
}

// planStageMove: an opportunity moved to a mapped stage of the followed pipeline moves its contact's lead.
func (h HighLevel) planStageMove(ctx context.Context, ev highlevel.Event, records highlevel.Records) (highlevel.Call, error) {
	if h.Pipeline.ID != "" && ev.PipelineID != h.Pipeline.ID {
		return ignore("the opportunity is in pipeline %s, not the one GEM follows (%s)", ev.PipelineID, integrationspack.EnvHighLevelPipelineID), nil
	}
	stage, ok := h.Pipeline.StageByID[ev.StageID]
	if !ok {
		return ignore("pipeline stage %s maps to no GEM stage (%s)", ev.StageID, integrationspack.EnvHighLevelStageIDs), nil
	}
	if !slices.Contains(businesspack.SettableLeadStages, stage) {
		return ignore("GEM stage %s is not one %s takes", stage, businesspack.UpdateLeadStage), nil
	}
	lead, err := records.Lead(ctx, ev.ContactID, "")
	if err != nil {
		return highlevel.Call{}, err
	}
	if lead == "" {
		return ignore("contact %s is no GEM lead", ev.ContactID), nil
	}
	return highlevel.Call{Tool: businesspack.UpdateLeadStage, Input: businesspack.LeadsUpdateStageInput{LeadID: lead, Stage: stage,
		Notes: truncate(fmt.Sprintf("Moved in HighLevel (opportunity %s)", or(ev.Name, ev.ID)), 400)}}, nil
}

func ignore(format string, args ...any) highlevel.Call {
	return highlevel.Call{Reason: fmt.Sprintf(format, args...)}
}

// contactName is the contact's name as people would say it.
func contactName(ev highlevel.Event) string {
	if n := strings.TrimSpace(ev.Name); n != "" {
		return n
	}
	if n := strings.TrimSpace(ev.FirstName + " " + ev.LastName); n != "" {
		return n
	}
	return or(strings.TrimSpace(ev.CompanyName), or(strings.TrimSpace(ev.Email), "HighLevel contact "+ev.ID))
}

// parseEventTime reads a HighLevel time (RFC 3339, or without a zone, taken as UTC). Inputs carry it to the
// second (RFC 3339 without a fraction), as they always have.
func parseEventTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// truncate cuts s to n characters.
func truncate(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
