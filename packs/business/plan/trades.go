package businessplan

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	businesspack "github.com/gemhq/gem/packs/business"

	"github.com/gemhq/gem/brain/planner"
	"github.com/gemhq/gem/brain/run"
)

// tradesRules plan the trades workflow: leads, inspections, quotes, jobs, invoices, payments and the money
// reports, and remembering what a person tells the brain about themselves. Ids may be left out of the
// message when the run's context carries them ("lock the inspection" with context inspection_id); an id
// that is in neither is reported as a missing required property.
var tradesRules = []planner.Rule{
	{
		Name: "mark_lead_lost", Tool: businesspack.MarkLeadLost,
		Help:     "mark a lead lost, with the reason",
		Examples: []string{"mark the lead lost: went with a competitor"},
		Patterns: []string{`^(?:please\s+)?(?:mark\s+)?(?:the\s+)?lead(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:as\s+|is\s+)?lost\b\s*(?:[:,-]|because|as|reason:?)?\s*(?P<reason>.*)$`},
		Build: func(m *planner.Match) (any, error) {
			reason := strings.Trim(m.Group("reason"), " .")
			if reason == "" {
				return nil, planner.Missing("reason", `why was the lead lost? Say it after "lost:"`)
			}
			return businesspack.LeadsMarkLostInput{LeadID: m.ID(), Reason: planner.Cut(reason, 240), ReasonCode: lostReasonCode(m.EnumValues("reason_code"), reason)}, nil
		},
	},
	{
		Name: "add_lead_source", Tool: businesspack.AddLeadSource,
		Help:     "record where a lead came from",
		Examples: []string{"the lead came from google ads"},
		Patterns: []string{
			`^(?:please\s+)?(?:the\s+)?lead(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+came\s+(?:from|via|through)\s+(?P<source>.+?)\s*[.!]*$`,
			`^(?:please\s+)?(?:set|record|add)\s+(?:the\s+)?(?:lead\s+)?source\s+(?:of|for)\s+(?:the\s+)?lead(?:\s+(?P<id2>` + planner.UUIDPattern + `))?\s*(?:to|as|:)\s*(?P<source>.+?)\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			text := strings.TrimPrefix(strings.TrimPrefix(m.Group("source"), "a "), "the ")
			source := text
			if src, _ := leadSource(nil, text); src != "" && src != businesspack.SourceOther {
				source = src
			}
			return businesspack.LeadsAddSourceInput{LeadID: m.ID(), Source: source}, nil
		},
	},
	{
		Name: "add_lead_photos", Tool: businesspack.AddLeadPhotosLink,
		Help:     "attach links to a lead's photos",
		Examples: []string{"add photos https://photos.app.goo.gl/abc123 to the lead"},
		Patterns: []string{`^(?:please\s+)?(?:add|attach|save)\s+(?:the\s+)?(?:photos?|pictures?|links?)\s+(?P<links>(?:https?://\S+[\s,]*(?:and\s+)?)+)\s*(?:to|for|on)\s+(?:the\s+)?lead(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.LeadsAddPhotosLinkInput{LeadID: m.ID(), Links: planner.LinksIn(m.Group("links"))}, nil
		},
	},
	{
		Name: "schedule_inspection", Tool: businesspack.ScheduleInspection,
		Help:     "book an inspection for a lead in a window of time",
		Examples: []string{"schedule an inspection on friday at 10am", "book an inspection for lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 tomorrow"},
		Patterns: []string{`^(?:please\s+)?(?:schedule|book|arrange|set\s+up)\s+(?:an?\s+|the\s+)?(?:roof\s+)?inspection(?:\s+for\s+(?:the\s+)?lead(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?(?P<when>.*)$`},
		Build: func(m *planner.Match) (any, error) {
			start, end, err := m.Window(m.Group("when"), "preferred_window")
			if err != nil {
				return nil, err
			}
			if start.IsZero() {
				return nil, planner.Missing("preferred_window", `when should the inspection be? Say a day (and a time), like "friday at 10am"`)
			}
			return businesspack.LeadsScheduleInspectionInput{LeadID: m.ID(), PreferredWindow: businesspack.PreferredWindow{Start: &start, End: &end}}, nil
		},
	},
	{
		Name: "start_inspection", Tool: businesspack.CreateInspection,
		Help:     "start an inspection for a lead (at an address)",
		Examples: []string{"start an inspection", "start an inspection for lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 at 12 Smith St, Newtown"},
		Patterns: []string{`^(?:please\s+)?(?:start|create|begin|open|new)\s+(?:an?\s+|the\s+)?inspection(?:\s+for\s+(?:the\s+)?lead(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?(?:\s+at\s+(?P<address>.+?))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.InspectionCreateInput{LeadID: m.ID(), SiteAddress: m.Group("address")}, nil
		},
	},
	{
		Name: "add_measurement", Tool: businesspack.AddMeasurement,
		Help:     "record a measurement with its label, value and unit",
		Examples: []string{"add measurement: roof area 180 m2", "add measurement: pitch 22 degrees"},
		Patterns: []string{`^(?:please\s+)?(?:add|record|log)\s+(?:a\s+)?measurement\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:,-]?\s*(?P<what>.+)$`},
		Build:    func(m *planner.Match) (any, error) { return parseMeasurement(m) },
	},
	{
		Name: "add_defect", Tool: businesspack.AddDefect,
		Help:     "record a defect: its category (tile, ridge, valley, flashing, gutter, leak or other), severity and notes",
		Examples: []string{"add a high defect: cracked ridge capping", "log defect: rusted valley iron"},
		Patterns: []string{`^(?:please\s+)?(?:add|record|log|note)\s+(?:an?\s+)?(?P<severity>low|minor|medium|moderate|high|major|critical|severe)?\s*(?:severity\s+)?defect\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:,-]?\s*(?P<title>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			notes, severity := m.Group("title"), m.Group("severity")
			if severity == "" {
				severity, notes = severityAfter(notes)
			}
			notes = planner.CleanTitle(notes)
			return businesspack.InspectionAddDefectInput{
				InspectionID: m.ID(),
				Category:     defectCategory(m.EnumValues("category"), notes),
				Severity:     severityOf(m.EnumValues("severity"), severity),
				Notes:        &notes,
			}, nil
		},
	},
	{
		Name: "add_checklist_item", Tool: businesspack.AddChecklistItem,
		Help:     "tick a checklist item: pass, fail or n/a",
		Examples: []string{"checklist: gutters pass", "checklist item flashings fail: lifting at the chimney"},
		Patterns: []string{`^(?:please\s+)?(?:add\s+(?:a\s+)?)?check(?:list)?\s*(?:item)?\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:\-]?\s*(?P<item>[\w\s/-]+?)\s*(?:[:=\-]|\bis\b|\bas\b)?\s*(?P<status>pass(?:ed|es)?|ok|good|fail(?:ed|s)?|bad|n/?a|not\s+applicable)\b\s*(?:[,:\-]\s*(?P<notes>.+))?$`},
		Build: func(m *planner.Match) (any, error) {
			item := planner.Slug(m.Group("item"))
			if item == "" {
				return nil, planner.Missing("item_key", `which checklist item? For example "checklist: gutters pass"`)
			}
			status := businesspack.ChecklistPass
			switch s := strings.ToLower(m.Group("status")); {
			case strings.HasPrefix(s, "fail") || s == "bad":
				status = businesspack.ChecklistFail
			case strings.HasPrefix(s, "n") && s != "not applicable" || s == "not applicable":
				status = businesspack.ChecklistNotApplicable
			}
			return businesspack.InspectionAddChecklistItemInput{
				InspectionID: m.ID(), ItemKey: strings.ReplaceAll(item, "-", "_"), Status: status, Notes: m.Group("notes"),
			}, nil
		},
	},
	{
		Name: "add_inspection_photo", Tool: businesspack.AddPhotoRef,
		Help:     "attach a photo to an inspection",
		Examples: []string{"add photo https://photos.example.com/baker/north-face.jpg to the inspection labelled north face"},
		Patterns: []string{`^(?:please\s+)?(?:add|attach|record)\s+(?:a\s+)?(?:photo|picture|image)(?:\s+ref(?:erence)?)?\s+(?P<ref>` + planner.FileRefPattern + `)\s+(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*(?:(?:labell?ed|as|:|-)\s*(?P<label>.+?))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.InspectionAddPhotoRefInput{InspectionID: m.ID(), FileRef: m.Group("ref"), Label: m.Group("label")}, nil
		},
	},
	{
		Name: "scope_summary", Tool: businesspack.GenerateScopeSummary,
		Help:     "write the scope of works from an inspection",
		Examples: []string{"generate the scope summary", "write the scope of works for the inspection as sections"},
		Patterns: []string{`^(?:please\s+)?(?:generate|create|make|write|draft|prepare)\s+(?:an?\s+|the\s+)?(?:scope(?:\s+of\s+works?)?(?:\s+summary)?|inspection\s+summary)(?:\s+(?:for|from|of)\s+(?:the\s+)?inspection)?(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s+(?:as|in)\s+(?P<format>bullets?|bullet\s+points|sections))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.InspectionGenerateScopeSummaryInput{InspectionID: m.ID()}
			switch f := m.Group("format"); {
			case strings.HasPrefix(f, "bullet"):
				in.Format = businesspack.ScopeBullet
			case f == "sections":
				in.Format = businesspack.ScopeSections
			}
			return in, nil
		},
	},
	planner.IDRule("submit_inspection", businesspack.SubmitInspection, "submit a finished inspection", []string{"submit the inspection"},
		`^(?:please\s+)?submit\s+(?:the\s+)?inspection`,
		func(id string) businesspack.InspectionSubmitInput {
			return businesspack.InspectionSubmitInput{InspectionID: id}
		}),
	planner.IDRule("lock_inspection", businesspack.LockInspection, "lock an inspection against changes", []string{"lock the inspection"},
		`^(?:please\s+)?lock\s+(?:the\s+)?inspection`,
		func(id string) businesspack.InspectionLockInput {
			return businesspack.InspectionLockInput{InspectionID: id}
		}),
	planner.IDRule("quote_from_inspection", businesspack.CreateQuoteFromInspection, "draft a quote from an inspection",
		[]string{"create a quote from the inspection"},
		`^(?:please\s+)?(?:create|make|draft|start|prepare)\s+(?:a\s+|the\s+)?quote\s+(?:from|for)\s+(?:the\s+)?inspection`,
		func(id string) businesspack.QuoteCreateFromInspectionInput {
			return businesspack.QuoteCreateFromInspectionInput{InspectionID: id}
		}),
	{
		Name: "add_line_item", Tool: businesspack.AddLineItem,
		Help:     "add a line to a quote",
		Examples: []string{"add line item: 12 x colorbond sheets at $85.50", "add line item: labour, 16 hours at $95"},
		Patterns: []string{`^(?:please\s+)?add\s+(?:a\s+)?(?:line\s+item|line|item)\s*(?:(?:to|on)\s+(?:the\s+)?quote(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:,-]?\s*(?P<what>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			item, err := parseLineItem(m.Group("what"))
			if err != nil {
				return nil, err
			}
			return businesspack.QuoteAddLineItemInput{QuoteID: m.ID(), LineItem: item}, nil
		},
	},
	{
		Name: "set_line_items", Tool: businesspack.UpdateLineItems,
		Help:     "replace all of a quote's line items (items separated by \"and\")",
		Examples: []string{"set the line items to: 12 x colorbond sheets at $85.50 and labour, 16 hours at $95"},
		Patterns: []string{`^(?:please\s+)?(?:set|replace|update)\s+(?:the\s+)?(?:quote'?s?\s+)?line\s+items(?:\s+(?:of|on|for)\s+(?:the\s+)?quote(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*(?:to|with)?\s*[:\-]?\s*(?P<items>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.QuoteUpdateLineItemsInput{QuoteID: m.ID()}
			for _, text := range lineItemSepRe.Split(m.Group("items"), -1) {
				item, err := parseLineItem(text)
				if err != nil {
					return nil, err
				}
				in.LineItems = append(in.LineItems, businesspack.QuoteLine{LineItem: item})
			}
			return in, nil
		},
	},
	{
		Name: "calculate_totals", Tool: businesspack.CalculateQuoteTotals,
		Help:     "total a quote (GST included)",
		Examples: []string{"calculate totals for the quote", "calculate totals for 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "recalculate quote totals"},
		Patterns: []string{
			`^(?:please\s+)?(?:re)?(?:calculate|compute|work\s+out|update|total\s+up)\s+(?:the\s+)?(?:quote\s+)?totals?\s*(?:(?:for|of|on)\s+)?(?:the\s+)?(?:quote\s*)?(?P<id>` + planner.UUIDPattern + `)?\s*[.!]*$`,
			`^(?:please\s+)?(?:re)?(?:calculate|compute|update|total(?:\s+up)?)\s+(?:the\s+)?quote\s*(?P<id>` + planner.UUIDPattern + `)?(?:\s+totals?)?\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.QuoteCalculateTotalsInput{QuoteID: m.ID()}, nil
		},
	},
	{
		Name: "quote_pdf", Tool: businesspack.GenerateQuotePDF,
		Help:     "make the quote's PDF",
		Examples: []string{"generate the quote pdf"},
		Patterns: []string{
			`^(?:please\s+)?(?:generate|create|make|produce|render|export)\s+(?:an?\s+|the\s+)?(?:quote\s+)?pdf(?:\s+(?:of|for)\s+(?:the\s+)?quote)?(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*[.!]*$`,
			`^(?:please\s+)?(?:generate|create|make|export)\s+(?:the\s+)?quote(?:\s+(?P<id2>` + planner.UUIDPattern + `))?\s+(?:as\s+(?:a\s+)?)?pdf\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) { return businesspack.QuoteGeneratePDFInput{QuoteID: m.ID()}, nil },
	},
	{
		Name: "send_quote_to_client", Tool: businesspack.SendQuoteToClient,
		Help:     "send a quote to the client by email, SMS or both",
		Examples: []string{"send the quote to the client by email"},
		Patterns: []string{`^(?:please\s+)?(?P<verb>send|email|text|sms)\s+(?:the\s+)?quote(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s+to\s+(?:the\s+)?(?:client|customer))?(?:\s+(?:by|via|over|as\s+an?)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			channel, err := channelOf(m)
			if err != nil {
				return nil, err
			}
			return businesspack.QuoteSendToClientInput{QuoteID: m.ID(), Channel: channel}, nil
		},
	},
	planner.IDRule("send_quote", businesspack.MarkQuoteSent, "record that a quote was sent", []string{"the quote was sent"},
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+planner.UUIDPattern+`)?\s+(?:as\s+)?sent|(?:the\s+)?quote\s*(?P<id2>`+planner.UUIDPattern+`)?\s+(?:was|is|has\s+been)\s+sent|(?:i\s+)?sent\s+(?:the\s+)?quote)`,
		func(id string) businesspack.QuoteMarkSentInput { return businesspack.QuoteMarkSentInput{QuoteID: id} }),
	planner.IDRule("accept_quote", businesspack.MarkQuoteAccepted, "mark a quote accepted", []string{"the quote was accepted"},
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+planner.UUIDPattern+`)?\s+(?:as\s+)?accepted|(?:the\s+)?quote\s*(?P<id2>`+planner.UUIDPattern+`)?\s+(?:was|is|has\s+been)\s+accepted|(?:the\s+)?(?:customer|client)\s+accepted\s+(?:the\s+)?quote|accept\s+(?:the\s+)?quote)`,
		func(id string) businesspack.QuoteMarkAcceptedInput {
			return businesspack.QuoteMarkAcceptedInput{QuoteID: id}
		}),
	{
		Name: "decline_quote", Tool: businesspack.MarkQuoteDeclined,
		Help:     "mark a quote declined, with the reason",
		Examples: []string{"the quote was declined: too expensive"},
		Patterns: []string{`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:as\s+)?(?:declined|rejected)|(?:the\s+)?quote(?:\s+(?P<id2>` + planner.UUIDPattern + `))?\s+(?:was|is|has\s+been)\s+(?:declined|rejected)|(?:the\s+)?(?:customer|client)\s+(?:declined|rejected|turned\s+down)\s+(?:the\s+)?quote(?:\s+(?P<id3>` + planner.UUIDPattern + `))?|decline\s+(?:the\s+)?quote(?:\s+(?P<id4>` + planner.UUIDPattern + `))?)\s*(?:(?:[:,-]|because|as|since|reason:?)\s*(?P<reason>.*?))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			reason := m.Group("reason")
			if reason == "" {
				return nil, planner.Missing("reason", `why was the quote declined? Say it after a colon: "the quote was declined: too expensive"`)
			}
			return businesspack.QuoteMarkDeclinedInput{QuoteID: m.ID(), Reason: planner.Cut(reason, 240)}, nil
		},
	},
	planner.IDRule("job_from_quote", businesspack.CreateJobFromAcceptedQuote, "create the job for an accepted quote", []string{"create a job from the quote"},
		`^(?:please\s+)?(?:create|start|book|make|open)\s+(?:a\s+|the\s+)?job\s+(?:from|for)\s+(?:the\s+)?quote`,
		func(id string) businesspack.JobCreateFromAcceptedQuoteInput {
			return businesspack.JobCreateFromAcceptedQuoteInput{QuoteID: id}
		}),
	{
		Name: "schedule_job", Tool: businesspack.AssignJobDates,
		Help:     "set a job's start (and end) date",
		Examples: []string{"schedule the job for monday", "schedule the job from 2026-12-01 to 2026-12-03"},
		Patterns: []string{`^(?:please\s+)?(?:schedule|assign|set|book)\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:to\s+start\s+|starting\s+|for\s+|on\s+|from\s+|dates?\s+)?(?P<when>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			start, rest, err := m.When(m.Group("when"), "start_date")
			if err != nil {
				return nil, err
			}
			if start.IsZero() {
				return nil, planner.Missing("start_date", `when does the job start? Say a day, like "monday" or 2026-12-01`)
			}
			in := businesspack.JobAssignDatesInput{JobID: m.ID(), StartDate: businesspack.DateOf(start)}
			end, _, err := m.When(rest, "end_date")
			if err != nil {
				return nil, err
			}
			if !end.IsZero() && end.After(start) {
				in.EndDate = businesspack.DateOf(end)
			}
			return in, nil
		},
	},
	{
		Name: "job_site_notes", Tool: businesspack.AddSiteNotes,
		Help:     "add site notes to a job",
		Examples: []string{"site notes: access through the side gate, dog in the yard"},
		Patterns: []string{`^(?:please\s+)?(?:add\s+)?(?:a\s+|the\s+)?site\s+notes?\s*(?:(?:to|for|on)\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:\-]\s*(?P<notes>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.JobAddSiteNotesInput{JobID: m.ID(), Notes: m.Group("notes")}, nil
		},
	},
	{
		Name: "job_progress", Tool: businesspack.AddProgressUpdate,
		Help:     "record progress on a job",
		Examples: []string{"progress update: old roof stripped, sarking down"},
		Patterns: []string{`^(?:please\s+)?(?:add\s+)?(?:a\s+)?(?:progress|job)\s+update\s*(?:(?:to|for|on)\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:\-]\s*(?P<summary>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.JobAddProgressUpdateInput{JobID: m.ID(), Summary: planner.Cut(m.Group("summary"), 400)}, nil
		},
	},
	{
		Name: "job_card", Tool: businesspack.CreateJobCard,
		Help:     "make a job card (text or PDF)",
		Examples: []string{"create the job card as a pdf"},
		Patterns: []string{`^(?:please\s+)?(?:create|generate|make|print|prepare)\s+(?:an?\s+|the\s+)?job\s+card(?:\s+(?:for|of)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s+(?:as\s+(?:an?\s+)?)?(?P<format>pdf|text))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.JobCreateJobCardInput{JobID: m.ID(), Format: strings.ToLower(m.Group("format"))}, nil
		},
	},
	{
		Name: "warranty_certificate", Tool: businesspack.GenerateWarrantyCertificate,
		Help:     "issue a warranty certificate for a job, with its term",
		Examples: []string{"generate a 10 year warranty certificate for the job"},
		Patterns: []string{`^(?:please\s+)?(?:generate|create|issue|make|prepare)\s+(?:an?\s+|the\s+)?(?:(?P<term>\d+[\s-]*(?:years?|yrs?|months?))\s+)?warranty(?:\s+certificate)?(?:\s+(?:for|on)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s*(?:,|for|of)\s*(?P<term2>\d+[\s-]*(?:years?|yrs?|months?)))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			term := m.Group("term")
			if term == "" {
				term = m.Group("term2")
			}
			if term == "" {
				return nil, planner.Missing("warranty_term", `for how long is the warranty? For example "generate a 10 year warranty certificate"`)
			}
			return businesspack.JobGenerateWarrantyCertificateInput{JobID: m.ID(), WarrantyTerm: warrantyTerm(term)}, nil
		},
	},
	{
		Name: "request_review", Tool: businesspack.RequestReview,
		Help:     "ask the client for a review by SMS, email or both",
		Examples: []string{"request a review by sms"},
		Patterns: []string{
			`^(?:please\s+)?(?:request|ask\s+for)\s+(?:an?\s+|the\s+)?(?:google\s+)?review(?:\s+(?:for|on)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s+(?:by|via|over)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`,
			// The client named first: "ask the client on job … for a google review by text".
			`^(?:please\s+)?(?:ask|get)\s+(?:the\s+)?(?:client|customer|homeowner)(?:\s+(?:on|for|from|of)\s+(?:the\s+)?job(?:\s+(?P<id2>` + planner.UUIDPattern + `))?)?\s+(?:for|to\s+(?:leave|write|give)(?:\s+(?:us|me))?)\s+(?:an?\s+|the\s+)?(?:google\s+)?review(?:\s+(?:by|via|over)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			channel, err := channelOf(m)
			if err != nil {
				return nil, err
			}
			return businesspack.JobRequestReviewInput{JobID: m.ID(), Channel: channel}, nil
		},
	},
	{
		Name: "complete_job", Tool: businesspack.CompleteJob,
		Help:     "complete a job",
		Examples: []string{"complete the job", "mark the job complete"},
		Patterns: []string{
			`^(?:please\s+)?(?:complete|finish|close|sign\s+off)\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*[.!]*$`,
			`^(?:please\s+)?mark\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:as\s+)?(?:complete|completed|done|finished)\s*[.!]*$`,
			// Said as news: "job … is finished", "we've wrapped up the job".
			`^(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:is|was|has\s+been|'s)\s+(?:now\s+)?(?:all\s+)?(?:complete|completed|done|finished|wrapped\s+up)\s*[.!]*$`,
			`^(?:(?:we|i)(?:'ve|\s+have)?\s+)?(?:finished|completed|wrapped\s+up)\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) { return businesspack.JobCompleteInput{JobID: m.ID()}, nil },
	},
	{
		Name: "invoice_job", Tool: businesspack.CreateInvoiceFromJob,
		Help:     "invoice a finished job (with payment terms in days)",
		Examples: []string{"invoice the job", "invoice the job, due in 14 days"},
		Patterns: []string{`^(?:please\s+)?(?:invoice|bill|(?:create|raise|make)\s+(?:an?\s+|the\s+)?invoice\s+(?:for|from))\s+(?:the\s+)?job(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s*,?\s*(?:due\s+in|payable\s+in|with|on)\s+(?P<days>\d{1,2})[\s-]*days?(?:\s+terms)?)?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			in := businesspack.InvoiceCreateFromJobInput{JobID: m.ID()}
			if d := m.Group("days"); d != "" {
				days, _ := strconv.Atoi(d)
				in.DueDays = &days
			}
			return in, nil
		},
	},
	{
		Name: "send_invoice", Tool: businesspack.SendInvoice,
		Help:     "send an invoice by email, SMS or both",
		Examples: []string{"send the invoice by email"},
		Patterns: []string{`^(?:please\s+)?(?P<verb>send|email|text)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:\s+to\s+(?:the\s+)?(?:client|customer))?(?:\s+(?:by|via|over)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			channel, err := channelOf(m)
			if err != nil {
				return nil, err
			}
			return businesspack.InvoiceSendInput{InvoiceID: m.ID(), Channel: channel}, nil
		},
	},
	{
		Name: "invoice_reminder_sms", Tool: businesspack.SendInvoiceReminderSMS,
		Help:     "text a payment reminder for an invoice",
		Examples: []string{"send a payment reminder sms to 0412 345 678: your invoice is now due, thanks!"},
		Patterns: []string{`^(?:please\s+)?(?:send|text)\s+(?:an?\s+)?(?:payment\s+)?reminder\s+(?:sms|text)\s+(?:to\s+)?(?P<to>` + planner.PhonePattern + `)(?:\s+(?:for|about)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:\-]\s*(?P<message>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			to, err := m.Phone("to", "to")
			if err != nil {
				return nil, err
			}
			return businesspack.InvoiceSendReminderSMSInput{InvoiceID: m.ID(), To: to, Message: planner.Cut(m.Group("message"), 1000)}, nil
		},
	},
	{
		Name: "invoice_reminder_email", Tool: businesspack.SendInvoiceReminderEmail,
		Help:     "email a payment reminder for an invoice",
		Examples: []string{"send a payment reminder email to ann@example.com: your invoice is now due"},
		Patterns: []string{`^(?:please\s+)?(?:send|email)\s+(?:an?\s+)?(?:payment\s+)?reminder\s+(?:e-?mail\s+)?(?:to\s+)?(?P<to>` + planner.EmailPattern + `)(?:\s+(?:for|about)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?\s*[:\-]\s*(?P<body>.+)$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.InvoiceSendReminderEmailInput{InvoiceID: m.ID(), To: m.Group("to"), Subject: "Payment reminder", Body: m.Group("body")}, nil
		},
	},
	{
		Name: "record_payment", Tool: businesspack.AddPayment,
		Help:     "record a payment on an invoice (cash, bank transfer, card or other)",
		Examples: []string{"record a payment of $1,500 on the invoice by card"},
		Patterns: []string{`^(?:please\s+)?(?:record|add|log|got|received?)\s+(?:a\s+)?payment(?:\s+(?:of\s+)?(?P<amount>\$?\s?[\d,]+(?:\.\d{1,2})?))?\s*(?:(?:on|for|to|against)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + planner.UUIDPattern + `))?)?(?:\s+(?:by|via|in|as)\s+(?P<method>[\w\s-]+?))?(?:\s*,?\s*(?:ref(?:erence)?|receipt)\s*[:#]?\s*(?P<ref>\S+))?\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			if m.Group("amount") == "" {
				return nil, planner.Missing("amount_cents", `how much was paid? Say it like "record a payment of $1,500 on the invoice"`)
			}
			cents, err := parseCents(m.Group("amount"))
			if err != nil {
				return nil, err
			}
			return businesspack.InvoiceAddPaymentInput{
				InvoiceID:   m.ID(),
				AmountCents: cents,
				Method:      paymentMethod(m.EnumValues("method"), m.Group("method")),
				Reference:   m.Group("ref"),
			}, nil
		},
	},
	{
		Name: "mark_invoice_overdue", Tool: businesspack.MarkInvoiceOverdue,
		Help:     "mark an invoice overdue",
		Examples: []string{"mark the invoice overdue"},
		Patterns: []string{`^(?:please\s+)?(?:mark|flag)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + planner.UUIDPattern + `))?\s+(?:as\s+)?overdue\s*[.!]*$`},
		Build: func(m *planner.Match) (any, error) {
			return businesspack.InvoiceMarkOverdueInput{InvoiceID: m.ID()}, nil
		},
	},
	{
		Name: "list_overdue", Tool: businesspack.ListOverdueInvoices,
		Help:     "list overdue invoices",
		Examples: []string{"which invoices are overdue?"},
		Patterns: []string{
			`^(?:please\s+)?(?:list|show|get|which|what)\b.*\boverdue\b.*$`, `^overdue\s+invoices\s*\??$`,
			// Who has not paid: "who still owes me money", "who hasn't paid yet".
			`^who(?:'s|\s+is)?\s+(?:still\s+)?(?:owes?|owing)\s+(?:me|us)(?:\s+(?:money|anything))?\s*[.!?]*$`,
			`^who\s+(?:still\s+)?(?:hasn'?t|has\s+not|haven'?t|have\s+not)\s+paid(?:\s+(?:me|us))?(?:\s+yet)?\s*[.!?]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			if planner.HasWord(m.Clause, "task", "tasks", "todo", "todos") {
				return nil, planner.ErrNoMatch
			}
			return businesspack.InvoiceListOverdueInput{}, nil
		},
	},
	{
		Name: "cashflow", Tool: businesspack.GenerateCashflowSnapshot,
		Help:     "cash flow for a period (money in from payments, money out)",
		Examples: []string{"cash flow this month", "show the cash flow from 2026-07-01 to 2026-09-30"},
		Patterns: []string{`^(?:please\s+)?(?:(?:show|generate|get|make|give\s+me|what(?:'s|\s+is)|how(?:'s|\s+is))\s+)?(?:(?:me|my|the|a|our)\s+)*cash\s*-?\s*flow(?:\s+(?:snapshot|report|summary))?(?:\s+(?:looking|going|tracking|travelling|traveling))?(?P<period>.*?)\s*[.!?]*$`},
		Build:    snapshotPeriod,
	},
	{
		Name: "profit_and_loss", Tool: businesspack.GeneratePnLSnapshot,
		Help:     "profit and loss for a period",
		Examples: []string{"profit and loss last month", "p&l this year"},
		Patterns: []string{`^(?:please\s+)?(?:(?:show|generate|get|make|give\s+me|what(?:'s|\s+is))\s+)?(?:(?:me|my|the|a|our)\s+)*(?:p\s*&\s*l|p\s*and\s*l|pnl|profit\s+(?:and|&)\s+loss)(?:\s+(?:snapshot|report|statement|summary))?(?P<period>.*?)\s*[.!?]*$`},
		Build:    snapshotPeriod,
	},

	// What the person tells the brain about themselves, and the leads' everyday phrasings ("new lead: ...",
	// "lead from ...", "list leads in contacted", ...): tried after the workflow's rules above, as always.
	{
		Name: "add_memory", Tool: businesspack.AddMemory,
		Help:     "remember a preference or a fact about you",
		Examples: []string{"remember that I prefer inspections in the morning", "remember fact: the ute is due for a service in March"},
		Patterns: []string{
			`^(?:please\s+)?remember\s+(?:my\s+|this\s+|a\s+)?(?P<type>preference|fact|boundary|commitment|pattern)\s*[:\-]\s*(?P<text>.+)$`,
			`^(?:please\s+)?remember\s+(?:that\s+)?(?P<text>i\s+(?:prefer|like|love|hate|dislike|don't\s+like|do\s+not\s+like|always|never)\b.+)$`,
		},
		Build: func(m *planner.Match) (any, error) {
			text := planner.CleanTitle(m.Group("text"))
			kind := strings.ToLower(m.Group("type"))
			if kind == "" {
				kind = businesspack.MemoryPreference
			}
			if !slices.Contains(m.EnumValues("memory_type"), kind) {
				return nil, planner.ErrNoMatch
			}
			return businesspack.IdentityAddMemoryInput{MemoryType: kind, Key: planner.Cut(planner.Slug(text), 120),
				Value: map[string]any{"text": text}, Source: businesspack.MemoryFromUser}, nil
		},
	},
	{
		Name: "update_lead_stage", Tool: businesspack.UpdateLeadStage,
		Help:     "move a lead along the pipeline (" + strings.Join(mapped(businesspack.SettableLeadStages, spaced), ", ") + ")",
		Examples: []string{"move the lead to contacted", "move lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 to quoted"},
		Patterns: []string{
			`^(?:please\s+)?(?:move|set|change|mark|update)\s+(?:the\s+)?lead(?:\s+(?P<id>` + planner.UUIDPattern + `))?(?:'s\s+stage|\s+stage)?\s+(?:to|as|into)\s+(?:stage\s+)?(?P<stage>[\w\s-]+?)\s*[.!]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			stage, err := planner.EnumValue(m.EnumValues("stage"), "stage", m.Group("stage"))
			if err != nil {
				return nil, err
			}
			return businesspack.LeadsUpdateStageInput{LeadID: m.ID(), Stage: stage}, nil
		},
	},
	{
		Name: "list_leads", Tool: businesspack.ListLeadsByStage,
		Help:     "list leads, optionally in one stage, suburb or source",
		Examples: []string{"list leads", "list new leads", "show leads in contacted", "leads in Newtown"},
		Patterns: []string{
			`^(?:please\s+)?(?:list|show|get|give\s+me|what\s+are|which\s+are)\b(?P<filters>.*?)\bleads\b(?P<more>.*)$`,
			`^(?P<filters>(?:\w+\s+)?)leads\b(?P<more>.*)$`,
			`^(?:please\s+)?(?:list|show)\s+lead\s+(?:in\s+)?(?P<filters>` + strings.Join(mapped(businesspack.LeadStages, stagePattern), "|") + `)(?:\s+stage)?\s*[.!?]*$`,
		},
		Build: func(m *planner.Match) (any, error) {
			words := m.Group("filters") + " " + m.Group("more")
			var in businesspack.LeadsListByStageInput
			// Every stage a lead can be in, not only those a person sets: the inspection tools move a lead
			// to inspected, and people ask for those leads too.
			for _, stage := range businesspack.LeadStages {
				if planner.HasWord(words, stage, strings.ReplaceAll(stage, "_", " ")) {
					in.Stage = stage
					break
				}
			}
			// The tool lists one stage: "not contacted" listed as contacted would show the very leads not
			// asked for.
			if in.Stage != "" && negatedRe.MatchString(words) {
				return nil, planner.Missing("stage", "I can list the leads in one stage (new, contacted, inspection scheduled, inspected, quoted, won or lost), not the leads outside one: which stage?")
			}
			in.Source, _ = leadSource(m.EnumValues("source"), words)
			if place := planner.PlaceIn(words); place != "" && in.Stage != planner.Normalize(place) {
				in.Suburb = place
			}
			return in, nil
		},
	},
	{
		Name: "create_lead", Tool: businesspack.CreateLead,
		Help:     "record a new lead with name, phone and suburb (and email and source: referral, gmb, google ads, meta, repeat)",
		Examples: []string{"new lead Ann Lee 0412 345 678 in Newtown, referral", "lead from John Smith 0400 123 456 in Penrith", "add lead: Jane Doe, 0400 111 222, Marrickville, facebook"},
		Patterns: []string{
			`^(?:please\s+)?(?:new|add|create|record|log)\s+(?:an?\s+)?(?:new\s+)?lead\b\s*(?:for\b|:|-|,)?\s*(?P<rest>.+)$`,
			`^lead\s*[:\-]\s*(?P<rest>.+)$`,
			`^(?:new\s+)?lead\s+from\s+(?P<rest>.+)$`,
		},
		Build: func(m *planner.Match) (any, error) { return parseLead(m) },
	},
}

// negatedRe finds a word that turns what follows around: "not contacted", "never inspected", "except lost".
var negatedRe = regexp.MustCompile(`(?i)\b(?:not|never|except|excluding|other\s+than)\b`)

// snapshotPeriod is a money report's input: the period the message names, or the tool's default.
func snapshotPeriod(m *planner.Match) (any, error) {
	from, to, err := m.Period(false)
	if err != nil || from == "" {
		return businesspack.FinanceSnapshotInput{}, err
	}
	var in businesspack.FinanceSnapshotInput
	if in.From, err = businesspack.ParseDate(from); err != nil {
		return nil, err
	}
	if in.To, err = businesspack.ParseDate(to); err != nil {
		return nil, err
	}
	return in, nil
}

// tradesSentences are what the answer says of the trades tools' succeeded calls.
var tradesSentences = run.Sentences{
	businesspack.CreateLead: run.Says(func(in businesspack.LeadsCreateInput, out businesspack.LeadsCreateOutput, _ run.When) string {
		if out.Created != nil && !*out.Created {
			return fmt.Sprintf("%s (%s) is already a lead (%s).", in.Name, in.Phone, out.LeadID)
		}
		s := fmt.Sprintf("Recorded a new lead: %s, %s, %s", in.Name, in.Phone, in.Suburb)
		if in.Source != "" {
			s += " (source: " + in.Source + ")"
		}
		return s + "."
	}, func(_ businesspack.LeadsCreateInput, out businesspack.LeadsCreateOutput, has func(string) bool) []string {
		switch {
		case has(businesspack.ScheduleInspection):
			return []string{fmt.Sprintf("book an inspection: \"schedule an inspection for lead %s on friday\"", out.LeadID)}
		case has(businesspack.UpdateLeadStage):
			return []string{fmt.Sprintf("after contacting them: \"move lead %s to contacted\"", out.LeadID)}
		}
		return nil
	}),
	businesspack.UpdateLeadStage: run.Says(func(in businesspack.LeadsUpdateStageInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Moved lead %s to %s.", in.LeadID, spaced(in.Stage))
	}, nil),
	businesspack.ListLeadsByStage: run.Says(func(_ struct{}, out businesspack.LeadsListByStageOutput, _ run.When) string {
		return run.List(out.Leads, "lead", "leads", func(l businesspack.Lead) string {
			s := l.Name
			if l.Phone != "" {
				s += ", " + l.Phone
			}
			if st := cmp.Or(l.Stage, l.Status); st != "" {
				s += " (" + st + ")"
			}
			return s
		})
	}, nil),
	businesspack.ScheduleInspection: run.Says(func(in businesspack.LeadsScheduleInspectionInput, out businesspack.LeadsScheduleInspectionOutput, when run.When) string {
		start := ""
		if in.PreferredWindow.Start != nil {
			start = when(*in.PreferredWindow.Start)
		}
		return fmt.Sprintf("Inspection %s booked for %s.", out.InspectionID, start)
	}, nil),
	businesspack.CreateInspection: run.Says(func(_ struct{}, out businesspack.Inspection, _ run.When) string {
		return fmt.Sprintf("Started inspection %s.", out.InspectionID)
	}, nil),
	businesspack.CreateQuoteFromInspection: run.Says(func(_ struct{}, out businesspack.QuoteCreateFromInspectionOutput, _ run.When) string {
		return fmt.Sprintf("Drafted quote %s.", out.QuoteID)
	}, nil),
	businesspack.CalculateQuoteTotals: run.Says(func(_ struct{}, out businesspack.QuoteCalculateTotalsOutput, _ run.When) string {
		t := out.Totals
		return fmt.Sprintf("Quote total %s: %s plus %s GST.", run.Money(t.TotalCents), run.Money(t.SubtotalCents), moneyOrNothing(cmp.Or(t.GSTCents, t.TaxCents)))
	}, nil),
	businesspack.CreateJobFromAcceptedQuote: run.Says(func(_ struct{}, out businesspack.Job, _ run.When) string {
		return fmt.Sprintf("Job %s created.", out.JobID)
	}, nil),
	businesspack.CreateInvoiceFromJob: run.Says(func(_ struct{}, out businesspack.Invoice, _ run.When) string {
		s := fmt.Sprintf("Invoice %s created", out.InvoiceID)
		if out.TotalCents != nil {
			s += " for " + run.Money(*out.TotalCents)
		}
		return s + "."
	}, nil),
	businesspack.AddPayment: run.Says(func(in businesspack.InvoiceAddPaymentInput, out businesspack.InvoiceAddPaymentOutput, _ run.When) string {
		s := fmt.Sprintf("Recorded %s on invoice %s", run.Money(in.AmountCents), in.InvoiceID)
		if inv := out.Invoice; inv != nil {
			s += fmt.Sprintf("; it is %s with %s left to pay", spaced(inv.Status), run.Money(inv.BalanceCents))
		}
		return s + "."
	}, nil),
	businesspack.AddMeasurement: run.Says(func(in businesspack.InspectionAddMeasurementInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Recorded %s: %v %s.", in.Label, in.Value, in.Unit)
	}, nil),
	businesspack.AddDefect: run.Says(func(in businesspack.InspectionAddDefectInput, _ struct{}, _ run.When) string {
		s := fmt.Sprintf("Recorded a %s defect", in.Category)
		if in.Severity != "" {
			s = fmt.Sprintf("Recorded a %s-severity %s defect", in.Severity, in.Category)
		}
		if in.Notes != nil && *in.Notes != "" {
			s += ": " + *in.Notes
		}
		return s + "."
	}, nil),
	businesspack.AddChecklistItem: run.Says(func(in businesspack.InspectionAddChecklistItemInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Checklist: %s is %s.", in.ItemKey, spaced(in.Status))
	}, nil),
	businesspack.LockInspection: run.Says(func(in businesspack.InspectionLockInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Inspection %s is locked.", in.InspectionID)
	}, nil),
	businesspack.GenerateScopeSummary: run.Says(func(_ struct{}, out businesspack.InspectionGenerateScopeSummaryOutput, _ run.When) string {
		return out.ScopeText
	}, nil),
	businesspack.MarkQuoteAccepted: run.Says(func(in businesspack.QuoteMarkAcceptedInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Quote %s is accepted.", in.QuoteID)
	}, nil),
	businesspack.MarkQuoteDeclined: run.Says(func(in businesspack.QuoteMarkDeclinedInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Quote %s is declined: %s.", in.QuoteID, strings.TrimSuffix(in.Reason, "."))
	}, nil),
	businesspack.SendQuoteToClient: run.Says(func(in businesspack.QuoteSendToClientInput, out businesspack.QuoteSendToClientOutput, _ run.When) string {
		sent := make([]string, len(out.Deliveries))
		for i, d := range out.Deliveries {
			sent[i] = channelName(d.Channel) + " to " + d.To
		}
		s := fmt.Sprintf("Sent quote %s to the customer by %s.", cmp.Or(out.QuoteID, in.QuoteID), strings.Join(sent, " and "))
		if len(sent) == 0 {
			s = fmt.Sprintf("Quote %s went to nobody.", cmp.Or(out.QuoteID, in.QuoteID))
		}
		for _, n := range out.NotDelivered {
			s += fmt.Sprintf(" The %s did not go: %s.", channelName(n.Channel), strings.TrimSuffix(n.Reason, "."))
		}
		return s
	}, nil),
	businesspack.AssignJobDates: run.Says(func(in businesspack.JobAssignDatesInput, out businesspack.Job, _ run.When) string {
		s := fmt.Sprintf("Job %s is scheduled from %s", in.JobID, in.StartDate)
		if out.EndDate != nil && !out.EndDate.Equal(in.StartDate) {
			s += " to " + out.EndDate.String()
		}
		return s + "."
	}, nil),
	businesspack.AddProgressUpdate: run.Says(func(in businesspack.JobAddProgressUpdateInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Recorded progress on job %s: %s.", in.JobID, strings.TrimSuffix(in.Summary, "."))
	}, nil),
	businesspack.CompleteJob: run.Says(func(in businesspack.JobCompleteInput, _ struct{}, _ run.When) string {
		return fmt.Sprintf("Job %s is completed.", in.JobID)
	}, nil),
	businesspack.GenerateCashflowSnapshot: run.Says(func(_ struct{}, out businesspack.FinanceCashflowSnapshotOutput, _ run.When) string {
		sum := out.Summary
		return fmt.Sprintf("Cash flow %s to %s: %s in, %s out, %s net.", sum.From, sum.To,
			run.Money(sum.CashIn.TotalCents), run.Money(sum.CashOut.TotalCents), run.Money(sum.NetCents))
	}, nil),
	businesspack.GeneratePnLSnapshot: run.Says(func(_ struct{}, out businesspack.FinancePnLSnapshotOutput, _ run.When) string {
		sum := out.Summary
		return fmt.Sprintf("Profit and loss %s to %s: %s revenue, %s gross profit, %s net profit.", sum.From, sum.To,
			run.Money(sum.RevenueCents), run.Money(sum.GrossProfitCents), run.Money(sum.NetProfitCents))
	}, nil),
	businesspack.ListOverdueInvoices: run.Says(func(_ struct{}, out businesspack.InvoiceListOverdueOutput, _ run.When) string {
		return run.List(out.Invoices, "overdue invoice", "overdue invoices", func(i businesspack.OverdueInvoice) string {
			number := i.InvoiceID
			if i.Number != nil {
				number = strconv.FormatInt(*i.Number, 10)
			}
			return fmt.Sprintf("%s: %s owing, due %s", number, run.Money(i.BalanceCents), i.DueOn)
		})
	}, nil),
}

// spaced says an enum value in words: inspection_scheduled → inspection scheduled.
func spaced(v string) string { return strings.ReplaceAll(v, "_", " ") }

// channelName is a message's channel as the answer says it: email or SMS.
func channelName(channel string) string {
	if channel == businesspack.ChannelSMS {
		return "SMS"
	}
	return channel
}

// stagePattern matches a stage as typed: inspection_scheduled or inspection scheduled.
func stagePattern(stage string) string { return strings.ReplaceAll(stage, "_", `[\s_]`) }

// mapped is f of each value, in order.
func mapped(values []string, f func(string) string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = f(v)
	}
	return out
}

// moneyOrNothing is cents as dollars (run.Money), or "" for none.
func moneyOrNothing(cents *int64) string {
	if cents == nil {
		return ""
	}
	return run.Money(*cents)
}
