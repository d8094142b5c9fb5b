package planner

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
)

// businessRules plan the trades workflow in GEM's contracts: leads, inspections, quotes, jobs, invoices,
// payments and the money reports. Ids may be left out of the message when the run's context carries them
// ("lock the inspection" with context inspection_id); an id that is in neither is reported as a missing
// required property.
var businessRules = []Rule{
	{
		Name: "mark_lead_lost", Tool: "leads.mark_lost",
		Help:     "mark a lead lost, with the reason",
		Examples: []string{"mark the lead lost: went with a competitor"},
		Patterns: []string{`^(?:please\s+)?(?:mark\s+)?(?:the\s+)?lead(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:as\s+|is\s+)?lost\b\s*(?:[:,-]|because|as|reason:?)?\s*(?P<reason>.*)$`},
		Build: func(m *Match) (any, error) {
			reason := strings.Trim(m.Group("reason"), " .")
			if reason == "" {
				return nil, Missing("reason", `why was the lead lost? Say it after "lost:"`)
			}
			return withID(m, "lead_id", map[string]any{"reason": Cut(reason, 240)}), nil
		},
	},
	{
		Name: "add_lead_source", Tool: "leads.add_source",
		Help:     "record where a lead came from",
		Examples: []string{"the lead came from google ads"},
		Patterns: []string{
			`^(?:please\s+)?(?:the\s+)?lead(?:\s+(?P<id>` + UUIDPattern + `))?\s+came\s+(?:from|via|through)\s+(?P<source>.+?)\s*[.!]*$`,
			`^(?:please\s+)?(?:set|record|add)\s+(?:the\s+)?(?:lead\s+)?source\s+(?:of|for)\s+(?:the\s+)?lead(?:\s+(?P<id2>` + UUIDPattern + `))?\s*(?:to|as|:)\s*(?P<source>.+?)\s*[.!]*$`,
		},
		Build: func(m *Match) (any, error) {
			text := strings.TrimPrefix(strings.TrimPrefix(m.Group("source"), "a "), "the ")
			source := text
			if src, _ := leadSource(nil, text); src != "" && src != "other" {
				source = src
			}
			return withID(m, "lead_id", map[string]any{"source": source}), nil
		},
	},
	{
		Name: "add_lead_photos", Tool: "leads.add_photos_link",
		Help:     "attach links to a lead's photos",
		Examples: []string{"add photos https://photos.app.goo.gl/abc123 to the lead"},
		Patterns: []string{`^(?:please\s+)?(?:add|attach|save)\s+(?:the\s+)?(?:photos?|pictures?|links?)\s+(?P<links>(?:https?://\S+[\s,]*(?:and\s+)?)+)\s*(?:to|for|on)\s+(?:the\s+)?lead(?:\s+(?P<id>` + UUIDPattern + `))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			return withID(m, "lead_id", map[string]any{"links": LinksIn(m.Group("links"))}), nil
		},
	},
	{
		Name: "schedule_inspection", Tool: "leads.schedule_inspection",
		Help:     "book an inspection for a lead in a window of time",
		Examples: []string{"schedule an inspection on friday at 10am", "book an inspection for lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 tomorrow"},
		Patterns: []string{`^(?:please\s+)?(?:schedule|book|arrange|set\s+up)\s+(?:an?\s+|the\s+)?(?:roof\s+)?inspection(?:\s+for\s+(?:the\s+)?lead(?:\s+(?P<id>` + UUIDPattern + `))?)?(?P<when>.*)$`},
		Build: func(m *Match) (any, error) {
			window, err := preferredWindow(m, m.Group("when"), "preferred_window")
			if err != nil {
				return nil, err
			}
			if window == nil {
				return nil, Missing("preferred_window", `when should the inspection be? Say a day (and a time), like "friday at 10am"`)
			}
			return withID(m, "lead_id", map[string]any{"preferred_window": window}), nil
		},
	},
	{
		Name: "start_inspection", Tool: "inspection.create",
		Help:     "start an inspection for a lead (at an address)",
		Examples: []string{"start an inspection", "start an inspection for lead 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10 at 12 Smith St, Newtown"},
		Patterns: []string{`^(?:please\s+)?(?:start|create|begin|open|new)\s+(?:an?\s+|the\s+)?inspection(?:\s+for\s+(?:the\s+)?lead(?:\s+(?P<id>` + UUIDPattern + `))?)?(?:\s+at\s+(?P<address>.+?))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			return withGroup(m, "address", "site_address", withID(m, "lead_id", map[string]any{})), nil
		},
	},
	{
		Name: "add_measurement", Tool: "inspection.add_measurement",
		Help:     "record a measurement with its label, value and unit",
		Examples: []string{"add measurement: roof area 180 m2", "add measurement: pitch 22 degrees"},
		Patterns: []string{`^(?:please\s+)?(?:add|record|log)\s+(?:a\s+)?measurement\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:,-]?\s*(?P<what>.+)$`},
		Build:    func(m *Match) (any, error) { return parseMeasurement(m) },
	},
	{
		Name: "add_defect", Tool: "inspection.add_defect",
		Help:     "record a defect: its category (tile, ridge, valley, flashing, gutter, leak or other), severity and notes",
		Examples: []string{"add a high defect: cracked ridge capping", "log defect: rusted valley iron"},
		Patterns: []string{`^(?:please\s+)?(?:add|record|log|note)\s+(?:an?\s+)?(?P<severity>low|minor|medium|moderate|high|major|critical|severe)?\s*(?:severity\s+)?defect\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:,-]?\s*(?P<title>.+)$`},
		Build: func(m *Match) (any, error) {
			notes := CleanTitle(m.Group("title"))
			in := map[string]any{"category": defectCategory(enumOf(m.Tool, "category"), notes), "notes": notes}
			if s := severityOf(enumOf(m.Tool, "severity"), m.Group("severity")); s != "" {
				in["severity"] = s
			}
			return withID(m, "inspection_id", in), nil
		},
	},
	{
		Name: "add_checklist_item", Tool: "inspection.add_checklist_item",
		Help:     "tick a checklist item: pass, fail or n/a",
		Examples: []string{"checklist: gutters pass", "checklist item flashings fail: lifting at the chimney"},
		Patterns: []string{`^(?:please\s+)?(?:add\s+(?:a\s+)?)?check(?:list)?\s*(?:item)?\s*(?:(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:\-]?\s*(?P<item>[\w\s/-]+?)\s*(?:[:=\-]|\bis\b|\bas\b)?\s*(?P<status>pass(?:ed|es)?|ok|good|fail(?:ed|s)?|bad|n/?a|not\s+applicable)\b\s*(?:[,:\-]\s*(?P<notes>.+))?$`},
		Build: func(m *Match) (any, error) {
			item := Slug(m.Group("item"))
			if item == "" {
				return nil, Missing("item_key", `which checklist item? For example "checklist: gutters pass"`)
			}
			status := "pass"
			switch s := strings.ToLower(m.Group("status")); {
			case strings.HasPrefix(s, "fail") || s == "bad":
				status = "fail"
			case strings.HasPrefix(s, "n") && s != "not applicable" || s == "not applicable":
				status = "na"
			}
			in := map[string]any{"item_key": strings.ReplaceAll(item, "-", "_"), "status": status}
			return withID(m, "inspection_id", withGroup(m, "notes", "notes", in)), nil
		},
	},
	{
		Name: "add_inspection_photo", Tool: "inspection.add_photo_ref",
		Help:     "attach a photo to an inspection",
		Examples: []string{"add photo https://photos.example.com/baker/north-face.jpg to the inspection labelled north face"},
		Patterns: []string{`^(?:please\s+)?(?:add|attach|record)\s+(?:a\s+)?(?:photo|picture|image)(?:\s+ref(?:erence)?)?\s+(?P<ref>` + fileRefPattern + `)\s+(?:to|for|on)\s+(?:the\s+)?inspection(?:\s+(?P<id>` + UUIDPattern + `))?\s*(?:(?:labell?ed|as|:|-)\s*(?P<label>.+?))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := map[string]any{"file_ref": m.Group("ref")}
			return withID(m, "inspection_id", withGroup(m, "label", "label", in)), nil
		},
	},
	{
		Name: "scope_summary", Tool: "inspection.generate_scope_summary",
		Help:     "write the scope of works from an inspection",
		Examples: []string{"generate the scope summary", "write the scope of works for the inspection as sections"},
		Patterns: []string{`^(?:please\s+)?(?:generate|create|make|write|draft|prepare)\s+(?:an?\s+|the\s+)?(?:scope(?:\s+of\s+works?)?(?:\s+summary)?|inspection\s+summary)(?:\s+(?:for|from|of)\s+(?:the\s+)?inspection)?(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s+(?:as|in)\s+(?P<format>bullets?|bullet\s+points|sections))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "inspection_id", map[string]any{})
			switch f := m.Group("format"); {
			case strings.HasPrefix(f, "bullet"):
				in["format"] = "bullet"
			case f == "sections":
				in["format"] = "sections"
			}
			return in, nil
		},
	},
	idRule("submit_inspection", "inspection.submit", "inspection_id", "submit a finished inspection", []string{"submit the inspection"},
		`^(?:please\s+)?submit\s+(?:the\s+)?inspection`),
	idRule("lock_inspection", "inspection.lock", "inspection_id", "lock an inspection against changes", []string{"lock the inspection"},
		`^(?:please\s+)?lock\s+(?:the\s+)?inspection`),
	idRule("quote_from_inspection", "quote.create_from_inspection", "inspection_id", "draft a quote from an inspection",
		[]string{"create a quote from the inspection"},
		`^(?:please\s+)?(?:create|make|draft|start|prepare)\s+(?:a\s+|the\s+)?quote\s+(?:from|for)\s+(?:the\s+)?inspection`),
	{
		Name: "add_line_item", Tool: "quote.add_line_item",
		Help:     "add a line to a quote",
		Examples: []string{"add line item: 12 x colorbond sheets at $85.50", "add line item: labour, 16 hours at $95"},
		Patterns: []string{`^(?:please\s+)?add\s+(?:a\s+)?(?:line\s+item|line|item)\s*(?:(?:to|on)\s+(?:the\s+)?quote(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:,-]?\s*(?P<what>.+)$`},
		Build: func(m *Match) (any, error) {
			item, err := parseLineItem(m.Group("what"))
			if err != nil {
				return nil, err
			}
			return withID(m, "quote_id", item), nil
		},
	},
	{
		Name: "set_line_items", Tool: "quote.update_line_items",
		Help:     "replace all of a quote's line items (items separated by \"and\")",
		Examples: []string{"set the line items to: 12 x colorbond sheets at $85.50 and labour, 16 hours at $95"},
		Patterns: []string{`^(?:please\s+)?(?:set|replace|update)\s+(?:the\s+)?(?:quote'?s?\s+)?line\s+items(?:\s+(?:of|on|for)\s+(?:the\s+)?quote(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*(?:to|with)?\s*[:\-]?\s*(?P<items>.+)$`},
		Build: func(m *Match) (any, error) {
			var items []any
			for _, text := range lineItemSepRe.Split(m.Group("items"), -1) {
				item, err := parseLineItem(text)
				if err != nil {
					return nil, err
				}
				items = append(items, item)
			}
			return withID(m, "quote_id", map[string]any{"line_items": items}), nil
		},
	},
	{
		Name: "calculate_totals", Tool: "quote.calculate_totals",
		Help:     "total a quote (GST included)",
		Examples: []string{"calculate totals for the quote", "calculate totals for 5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10", "recalculate quote totals"},
		Patterns: []string{
			`^(?:please\s+)?(?:re)?(?:calculate|compute|work\s+out|update|total\s+up)\s+(?:the\s+)?(?:quote\s+)?totals?\s*(?:(?:for|of|on)\s+)?(?:the\s+)?(?:quote\s*)?(?P<id>` + UUIDPattern + `)?\s*[.!]*$`,
			`^(?:please\s+)?(?:re)?(?:calculate|compute|update|total(?:\s+up)?)\s+(?:the\s+)?quote\s*(?P<id>` + UUIDPattern + `)?(?:\s+totals?)?\s*[.!]*$`,
		},
		Build: func(m *Match) (any, error) { return withID(m, "quote_id", map[string]any{}), nil },
	},
	{
		Name: "quote_pdf", Tool: "quote.generate_pdf",
		Help:     "make the quote's PDF",
		Examples: []string{"generate the quote pdf"},
		Patterns: []string{
			`^(?:please\s+)?(?:generate|create|make|produce|render|export)\s+(?:an?\s+|the\s+)?(?:quote\s+)?pdf(?:\s+(?:of|for)\s+(?:the\s+)?quote)?(?:\s+(?P<id>` + UUIDPattern + `))?\s*[.!]*$`,
			`^(?:please\s+)?(?:generate|create|make|export)\s+(?:the\s+)?quote(?:\s+(?P<id2>` + UUIDPattern + `))?\s+(?:as\s+(?:a\s+)?)?pdf\s*[.!]*$`,
		},
		Build: func(m *Match) (any, error) { return withID(m, "quote_id", map[string]any{}), nil },
	},
	{
		Name: "send_quote_to_client", Tool: "quote.send_to_client",
		Help:     "send a quote to the client by email, SMS or both",
		Examples: []string{"send the quote to the client by email"},
		Patterns: []string{`^(?:please\s+)?(?P<verb>send|email|text|sms)\s+(?:the\s+)?quote(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s+to\s+(?:the\s+)?(?:client|customer))?(?:\s+(?:by|via|over|as\s+an?)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			channel, err := channelOf(m)
			if err != nil {
				return nil, err
			}
			return withID(m, "quote_id", map[string]any{"channel": channel}), nil
		},
	},
	idRule("send_quote", "quote.mark_sent", "quote_id", "record that a quote was sent", []string{"the quote was sent"},
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+UUIDPattern+`)?\s+(?:as\s+)?sent|(?:the\s+)?quote\s*(?P<id2>`+UUIDPattern+`)?\s+(?:was|is|has\s+been)\s+sent|(?:i\s+)?sent\s+(?:the\s+)?quote)`),
	idRule("accept_quote", "quote.mark_accepted", "quote_id", "mark a quote accepted", []string{"the quote was accepted"},
		`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote\s*(?P<id>`+UUIDPattern+`)?\s+(?:as\s+)?accepted|(?:the\s+)?quote\s*(?P<id2>`+UUIDPattern+`)?\s+(?:was|is|has\s+been)\s+accepted|(?:the\s+)?(?:customer|client)\s+accepted\s+(?:the\s+)?quote|accept\s+(?:the\s+)?quote)`),
	{
		Name: "decline_quote", Tool: "quote.mark_declined",
		Help:     "mark a quote declined, with the reason",
		Examples: []string{"the quote was declined: too expensive"},
		Patterns: []string{`^(?:please\s+)?(?:mark\s+(?:the\s+)?quote(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:as\s+)?(?:declined|rejected)|(?:the\s+)?quote(?:\s+(?P<id2>` + UUIDPattern + `))?\s+(?:was|is|has\s+been)\s+(?:declined|rejected)|(?:the\s+)?(?:customer|client)\s+(?:declined|rejected|turned\s+down)\s+(?:the\s+)?quote(?:\s+(?P<id3>` + UUIDPattern + `))?|decline\s+(?:the\s+)?quote(?:\s+(?P<id4>` + UUIDPattern + `))?)\s*(?:(?:[:,-]|because|as|since|reason:?)\s*(?P<reason>.*?))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			reason := m.Group("reason")
			if reason == "" {
				return nil, Missing("reason", `why was the quote declined? Say it after a colon: "the quote was declined: too expensive"`)
			}
			return withID(m, "quote_id", map[string]any{"reason": Cut(reason, 240)}), nil
		},
	},
	idRule("job_from_quote", "job.create_from_accepted_quote", "quote_id", "create the job for an accepted quote", []string{"create a job from the quote"},
		`^(?:please\s+)?(?:create|start|book|make|open)\s+(?:a\s+|the\s+)?job\s+(?:from|for)\s+(?:the\s+)?quote`),
	{
		Name: "schedule_job", Tool: "job.assign_dates",
		Help:     "set a job's start (and end) date",
		Examples: []string{"schedule the job for monday", "schedule the job from 2026-12-01 to 2026-12-03"},
		Patterns: []string{`^(?:please\s+)?(?:schedule|assign|set|book)\s+(?:the\s+)?job(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:to\s+start\s+|starting\s+|for\s+|on\s+|from\s+|dates?\s+)?(?P<when>.+)$`},
		Build: func(m *Match) (any, error) {
			when, rest, err := extractWhen(m.Group("when"), "start_date", m.Now, m.Location)
			if err != nil {
				return nil, err
			}
			if when.IsZero() {
				return nil, Missing("start_date", `when does the job start? Say a day, like "monday" or 2026-12-01`)
			}
			in := map[string]any{"start_date": when.Format(time.DateOnly)}
			end, _, err := extractWhen(rest, "end_date", m.Now, m.Location)
			if err != nil {
				return nil, err
			}
			if !end.IsZero() && end.After(when) {
				in["end_date"] = end.Format(time.DateOnly)
			}
			return withID(m, "job_id", in), nil
		},
	},
	{
		Name: "job_site_notes", Tool: "job.add_site_notes",
		Help:     "add site notes to a job",
		Examples: []string{"site notes: access through the side gate, dog in the yard"},
		Patterns: []string{`^(?:please\s+)?(?:add\s+)?(?:a\s+|the\s+)?site\s+notes?\s*(?:(?:to|for|on)\s+(?:the\s+)?job(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:\-]\s*(?P<notes>.+)$`},
		Build: func(m *Match) (any, error) {
			return withID(m, "job_id", map[string]any{"notes": m.Group("notes")}), nil
		},
	},
	{
		Name: "job_progress", Tool: "job.add_progress_update",
		Help:     "record progress on a job",
		Examples: []string{"progress update: old roof stripped, sarking down"},
		Patterns: []string{`^(?:please\s+)?(?:add\s+)?(?:a\s+)?(?:progress|job)\s+update\s*(?:(?:to|for|on)\s+(?:the\s+)?job(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:\-]\s*(?P<summary>.+)$`},
		Build: func(m *Match) (any, error) {
			return withID(m, "job_id", map[string]any{"summary": Cut(m.Group("summary"), 400)}), nil
		},
	},
	{
		Name: "job_card", Tool: "job.create_job_card",
		Help:     "make a job card (text or PDF)",
		Examples: []string{"create the job card as a pdf"},
		Patterns: []string{`^(?:please\s+)?(?:create|generate|make|print|prepare)\s+(?:an?\s+|the\s+)?job\s+card(?:\s+(?:for|of)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s+(?:as\s+(?:an?\s+)?)?(?P<format>pdf|text))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "job_id", map[string]any{})
			if f := strings.ToLower(m.Group("format")); f != "" {
				in["format"] = f
			}
			return in, nil
		},
	},
	{
		Name: "warranty_certificate", Tool: "job.generate_warranty_certificate",
		Help:     "issue a warranty certificate for a job, with its term",
		Examples: []string{"generate a 10 year warranty certificate for the job"},
		Patterns: []string{`^(?:please\s+)?(?:generate|create|issue|make|prepare)\s+(?:an?\s+|the\s+)?(?:(?P<term>\d+[\s-]*(?:years?|yrs?|months?))\s+)?warranty(?:\s+certificate)?(?:\s+(?:for|on)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s*(?:,|for|of)\s*(?P<term2>\d+[\s-]*(?:years?|yrs?|months?)))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			term := m.Group("term")
			if term == "" {
				term = m.Group("term2")
			}
			if term == "" {
				return nil, Missing("warranty_term", `for how long is the warranty? For example "generate a 10 year warranty certificate"`)
			}
			return withID(m, "job_id", map[string]any{"warranty_term": warrantyTerm(term)}), nil
		},
	},
	{
		Name: "request_review", Tool: "job.request_review",
		Help:     "ask the client for a review by SMS, email or both",
		Examples: []string{"request a review by sms"},
		Patterns: []string{`^(?:please\s+)?(?:request|ask\s+for)\s+(?:an?\s+|the\s+)?(?:google\s+)?review(?:\s+(?:for|on)\s+(?:the\s+)?job)?(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s+(?:by|via|over)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			channel, err := channelOf(m)
			if err != nil {
				return nil, err
			}
			return withID(m, "job_id", map[string]any{"channel": channel}), nil
		},
	},
	{
		Name: "complete_job", Tool: "job.complete",
		Help:     "complete a job",
		Examples: []string{"complete the job", "mark the job complete"},
		Patterns: []string{
			`^(?:please\s+)?(?:complete|finish|close|sign\s+off)\s+(?:the\s+)?job(?:\s+(?P<id>` + UUIDPattern + `))?\s*[.!]*$`,
			`^(?:please\s+)?mark\s+(?:the\s+)?job(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:as\s+)?(?:complete|completed|done|finished)\s*[.!]*$`,
		},
		Build: func(m *Match) (any, error) { return withID(m, "job_id", map[string]any{}), nil },
	},
	{
		Name: "invoice_job", Tool: "invoice.create_from_job",
		Help:     "invoice a finished job (with payment terms in days)",
		Examples: []string{"invoice the job", "invoice the job, due in 14 days"},
		Patterns: []string{`^(?:please\s+)?(?:invoice|bill|(?:create|raise|make)\s+(?:an?\s+|the\s+)?invoice\s+(?:for|from))\s+(?:the\s+)?job(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s*,?\s*(?:due\s+in|payable\s+in|with|on)\s+(?P<days>\d{1,2})[\s-]*days?(?:\s+terms)?)?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			in := withID(m, "job_id", map[string]any{})
			if d := m.Group("days"); d != "" {
				days, _ := strconv.Atoi(d)
				in["due_days"] = days
			}
			return in, nil
		},
	},
	{
		Name: "send_invoice", Tool: "invoice.send",
		Help:     "send an invoice by email, SMS or both",
		Examples: []string{"send the invoice by email"},
		Patterns: []string{`^(?:please\s+)?(?P<verb>send|email|text)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + UUIDPattern + `))?(?:\s+to\s+(?:the\s+)?(?:client|customer))?(?:\s+(?:by|via|over)\s+(?P<channel>` + channelPattern + `))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			channel, err := channelOf(m)
			if err != nil {
				return nil, err
			}
			return withID(m, "invoice_id", map[string]any{"channel": channel}), nil
		},
	},
	{
		Name: "invoice_reminder_sms", Tool: "invoice.send_reminder_sms",
		Help:     "text a payment reminder for an invoice",
		Examples: []string{"send a payment reminder sms to 0412 345 678: your invoice is now due, thanks!"},
		Patterns: []string{`^(?:please\s+)?(?:send|text)\s+(?:an?\s+)?(?:payment\s+)?reminder\s+(?:sms|text)\s+(?:to\s+)?(?P<to>` + phonePattern + `)(?:\s+(?:for|about)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:\-]\s*(?P<message>.+)$`},
		Build: func(m *Match) (any, error) {
			to, err := m.Phone("to", "to")
			if err != nil {
				return nil, err
			}
			return withID(m, "invoice_id", map[string]any{"to": to, "message": Cut(m.Group("message"), 1000)}), nil
		},
	},
	{
		Name: "invoice_reminder_email", Tool: "invoice.send_reminder_email",
		Help:     "email a payment reminder for an invoice",
		Examples: []string{"send a payment reminder email to ann@example.com: your invoice is now due"},
		Patterns: []string{`^(?:please\s+)?(?:send|email)\s+(?:an?\s+)?(?:payment\s+)?reminder\s+(?:e-?mail\s+)?(?:to\s+)?(?P<to>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)(?:\s+(?:for|about)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + UUIDPattern + `))?)?\s*[:\-]\s*(?P<body>.+)$`},
		Build: func(m *Match) (any, error) {
			return withID(m, "invoice_id", map[string]any{"to": m.Group("to"), "subject": "Payment reminder", "body": m.Group("body")}), nil
		},
	},
	{
		Name: "record_payment", Tool: "invoice.add_payment",
		Help:     "record a payment on an invoice (cash, bank transfer, card or other)",
		Examples: []string{"record a payment of $1,500 on the invoice by card"},
		Patterns: []string{`^(?:please\s+)?(?:record|add|log|got|received?)\s+(?:a\s+)?payment\s+(?:of\s+)?(?P<amount>\$?\s?[\d,]+(?:\.\d{1,2})?)\s*(?:(?:on|for|to|against)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + UUIDPattern + `))?)?(?:\s+(?:by|via|in|as)\s+(?P<method>[\w\s-]+?))?(?:\s*,?\s*(?:ref(?:erence)?|receipt)\s*[:#]?\s*(?P<ref>\S+))?\s*[.!]*$`},
		Build: func(m *Match) (any, error) {
			cents, err := parseCents(m.Group("amount"))
			if err != nil {
				return nil, err
			}
			in := map[string]any{"amount_cents": cents}
			if method := paymentMethod(enumOf(m.Tool, "method"), m.Group("method")); method != "" {
				in["method"] = method
			}
			return withID(m, "invoice_id", withGroup(m, "ref", "reference", in)), nil
		},
	},
	{
		Name: "mark_invoice_overdue", Tool: "invoice.mark_overdue",
		Help:     "mark an invoice overdue",
		Examples: []string{"mark the invoice overdue"},
		Patterns: []string{`^(?:please\s+)?(?:mark|flag)\s+(?:the\s+)?invoice(?:\s+(?P<id>` + UUIDPattern + `))?\s+(?:as\s+)?overdue\s*[.!]*$`},
		Build:    func(m *Match) (any, error) { return withID(m, "invoice_id", map[string]any{}), nil },
	},
	{
		Name: "list_overdue", Tool: "invoice.list_overdue",
		Help:     "list overdue invoices",
		Examples: []string{"which invoices are overdue?"},
		Patterns: []string{`^(?:please\s+)?(?:list|show|get|which|what)\b.*\boverdue\b.*$`, `^overdue\s+invoices\s*\??$`},
		Build: func(m *Match) (any, error) {
			if HasWord(m.Clause, "task", "tasks", "todo", "todos") {
				return nil, ErrNoMatch
			}
			return map[string]any{}, nil
		},
	},
	{
		Name: "cashflow", Tool: "finance.generate_cashflow_snapshot",
		Help:     "cash flow for a period (money in from payments, money out)",
		Examples: []string{"cash flow this month", "show the cash flow from 2026-07-01 to 2026-09-30"},
		Patterns: []string{`^(?:please\s+)?(?:(?:show|generate|get|make|give\s+me|what(?:'s|\s+is))\s+)?(?:(?:me|my|the|a|our)\s+)*cash\s*-?\s*flow(?:\s+(?:snapshot|report|summary))?(?P<period>.*?)\s*[.!?]*$`},
		Build:    func(m *Match) (any, error) { return periodInput(m, false) },
	},
	{
		Name: "profit_and_loss", Tool: "finance.generate_pnl_snapshot",
		Help:     "profit and loss for a period",
		Examples: []string{"profit and loss last month", "p&l this year"},
		Patterns: []string{`^(?:please\s+)?(?:(?:show|generate|get|make|give\s+me|what(?:'s|\s+is))\s+)?(?:(?:me|my|the|a|our)\s+)*(?:p\s*&\s*l|p\s*and\s*l|pnl|profit\s+(?:and|&)\s+loss)(?:\s+(?:snapshot|report|statement|summary))?(?P<period>.*?)\s*[.!?]*$`},
		Build:    func(m *Match) (any, error) { return periodInput(m, false) },
	},
}

const (
	channelPattern = `email\s+and\s+(?:sms|text)|(?:sms|text)\s+and\s+email|both|e-?mail|sms|text(?:\s+message)?`
	phonePattern   = `(?:\+|\()?\d[\d\s().-]{6,}\d`
	fileRefPattern = `[a-z][a-z0-9+.-]*://\S+|\S+\.(?:jpe?g|png|heic|webp|gif|mp4|mov|pdf|docx?)`
)

// channelOf is a send's channel (email, sms or both): the one named, else the verb's ("text the quote");
// asked for when neither says.
func channelOf(m *Match) (string, error) {
	c := strings.ToLower(m.Group("channel"))
	switch {
	case c == "both" || strings.Contains(c, " and "):
		return "both", nil
	case strings.Contains(c, "mail"):
		return "email", nil
	case c != "":
		return "sms", nil
	}
	switch strings.ToLower(m.Group("verb")) {
	case "email":
		return "email", nil
	case "text", "sms":
		return "sms", nil
	}
	return "", Missing("channel", `by email, SMS or both? For example "send the quote by email"`)
}

var (
	numberUnitRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(m2|m²|sqm|square\s+met(?:re|er)s?|ft2|sq\s*ft|square\s+feet|degrees?|deg|°|millimet(?:re|er)s?|mm|met(?:re|er)s?|lm|m|feet|ft|downpipes?)?`)
	priceRe      = regexp.MustCompile(`\$\s?(\d[\d,]*(?:\.\d{1,2})?)|(\d[\d,]*(?:\.\d{1,2})?)\s*(?:dollars|aud)\b`)
	quantityRe   = regexp.MustCompile(`(?i)^\s*(\d+(?:\.\d{1,3})?)\s*(?:x|×|\*)?\s+|\s(\d+(?:\.\d{1,3})?)\s*(x|×|units?|pcs|pieces|sheets|lengths|hours?|hrs?|m2|lm|metres|meters)\b`)
)

// measurementKinds name what people measure on a roof, with the label recorded and the usual unit.
var measurementKinds = []struct {
	label string
	words []string
	unit  string
}{
	{"roof pitch", []string{"pitch", "slope", "angle"}, "deg"},
	{"roof area", []string{"roof area", "area", "roof"}, "m2"},
	{"gutter length", []string{"gutter", "gutters", "guttering"}, "m"},
	{"ridge length", []string{"ridge", "ridges", "ridge capping"}, "m"},
	{"valley length", []string{"valley", "valleys"}, "m"},
	{"fascia length", []string{"fascia", "fascias"}, "m"},
	{"downpipes", []string{"downpipe", "downpipes"}, "count"},
}

func parseMeasurement(m *Match) (map[string]any, error) {
	what := m.Group("what")
	loc := numberUnitRe.FindStringSubmatchIndex(what)
	if loc == nil {
		return nil, Missing("value", `what was measured, and how much? For example "roof area 180 m2" or "pitch 22 degrees"`)
	}
	num := numberUnitRe.FindStringSubmatch(what)
	value, _ := strconv.ParseFloat(num[1], 64)
	label, unit := "", ""
	for _, k := range measurementKinds {
		if HasWord(what, k.words...) {
			label, unit = k.label, k.unit
			break
		}
	}
	if label == "" {
		label = CleanTitle(what[:loc[0]])
	}
	switch u := strings.ToLower(num[2]); {
	case u == "m2" || u == "m²" || u == "sqm" || strings.HasPrefix(u, "square m"):
		unit = "m2"
	case u == "ft2" || strings.HasPrefix(u, "sq") || strings.HasPrefix(u, "square f"):
		unit = "ft2"
	case strings.HasPrefix(u, "deg") || u == "°":
		unit = "deg"
	case u == "mm" || strings.HasPrefix(u, "milli"):
		unit = "mm"
	case u == "m" || u == "lm" || strings.HasPrefix(u, "met"):
		unit = "m"
	case u == "ft" || u == "feet":
		unit = "ft"
	case strings.HasPrefix(u, "downpipe"):
		unit = "count"
	}
	switch {
	case label == "":
		return nil, Missing("label", fmt.Sprintf(`what measures %s? For example "roof area 180 m2"`, num[1]))
	case unit == "":
		return nil, Missing("unit", fmt.Sprintf("in which unit is %s? Say m2, m, mm, ft, degrees or a count", num[1]))
	}
	in := map[string]any{"label": label, "value": value, "unit": unit}
	if rest := CleanTitle(what[loc[1]:]); rest != "" {
		in["notes"] = rest
	}
	return withID(m, "inspection_id", in), nil
}

// defectCategories map words to GEM's defect categories; the first that matches wins, else other.
var defectCategories = []struct {
	category string
	words    []string
}{
	{"leak", []string{"leak", "leaks", "leaking", "water damage", "water stain", "water stains", "damp"}},
	{"ridge", []string{"ridge", "ridges", "ridge capping", "ridge caps", "pointing", "bedding"}},
	{"valley", []string{"valley", "valleys", "valley iron"}},
	{"flashing", []string{"flashing", "flashings", "apron", "counter flashing"}},
	{"gutter", []string{"gutter", "gutters", "guttering", "downpipe", "downpipes", "box gutter"}},
	{"tile", []string{"tile", "tiles", "tiled", "sheet", "sheets", "shingle", "shingles", "slate"}},
}

func defectCategory(allowed []string, text string) string {
	for _, c := range defectCategories {
		if HasWord(text, c.words...) && (len(allowed) == 0 || slices.Contains(allowed, c.category)) {
			return c.category
		}
	}
	return "other"
}

// severityOf maps what people say to a severity the tool's enum has: minor is low, critical is high where
// there is no critical.
func severityOf(allowed []string, said string) string {
	said = strings.ToLower(said)
	if said == "" {
		return ""
	}
	if slices.Contains(allowed, said) {
		return said
	}
	switch said {
	case "minor":
		said = "low"
	case "moderate":
		said = "medium"
	case "major", "critical", "severe":
		said = "high"
	}
	if len(allowed) == 0 || slices.Contains(allowed, said) {
		return said
	}
	return ""
}

func parseCents(s string) (int64, error) {
	s = strings.NewReplacer("$", "", ",", "", " ", "").Replace(s)
	dollars, cents, _ := strings.Cut(s, ".")
	d, err := strconv.ParseInt(dollars, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an amount of money", s)
	}
	c := int64(0)
	if cents != "" {
		if len(cents) == 1 {
			cents += "0"
		}
		c, _ = strconv.ParseInt(cents, 10, 64)
	}
	return d*100 + c, nil
}

var paymentMethods = []struct {
	method string
	words  []string
}{
	{"card", []string{"card", "credit card", "debit card", "eftpos", "visa", "mastercard", "amex"}},
	{"bank_transfer", []string{"bank transfer", "transfer", "eft", "bank", "direct deposit", "deposit"}},
	{"cash", []string{"cash"}},
}

// paymentMethod maps what people say to a method the tool's enum has; anything else named (a cheque) is
// other.
func paymentMethod(allowed []string, s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	for _, m := range paymentMethods {
		if HasWord(s, m.words...) && (len(allowed) == 0 || slices.Contains(allowed, m.method)) {
			return m.method
		}
	}
	if slices.Contains(allowed, "other") {
		return "other"
	}
	return ""
}

// parseLineItem reads "12 x colorbond sheets at $85.50" or "labour, 16 hours at $95" or "skip bin $450".
// negativeRe finds a minus sign on a leading quantity ("-12 x") or on a price ("-$5", "$-5"); a dash
// between words ("gutter guard - $400") is a separator, not a sign.
var negativeRe = regexp.MustCompile(`^\s*[-−]\s*\d|(?:^|\s)[-−]\$\d|\$[-−]\d`)

func parseLineItem(what string) (map[string]any, error) {
	// "-12 x sheets" would otherwise lose its sign as a bullet and become 12 sheets.
	if negativeRe.MatchString(what) {
		return nil, fmt.Errorf("%q: a line item's quantity and price cannot be negative", strings.TrimSpace(what))
	}
	price := priceRe.FindStringSubmatchIndex(what)
	if price == nil {
		return nil, Missing("unit_price_cents", "what does the item cost? Give a price like $85.50")
	}
	raw := what[price[0]:price[1]]
	cents, err := parseCents(strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(raw), "dollars"), "aud"))
	if err != nil {
		return nil, err
	}
	rest := what[:price[0]] + " " + what[price[1]:]
	quantity, unit := 1.0, ""
	if q := quantityRe.FindStringSubmatchIndex(rest); q != nil {
		if q[2] >= 0 {
			quantity, _ = strconv.ParseFloat(rest[q[2]:q[3]], 64)
		} else {
			quantity, _ = strconv.ParseFloat(rest[q[4]:q[5]], 64)
			if u := strings.ToLower(rest[q[6]:q[7]]); u != "x" && u != "×" {
				unit = map[string]string{"hrs": "hours", "hr": "hour", "meters": "metres"}[u]
				if unit == "" {
					unit = u
				}
			}
		}
		rest = rest[:q[0]] + " " + rest[q[1]:]
	}
	desc := trailingPriceWordRe.ReplaceAllString(strings.TrimSpace(rest), "")
	desc = CleanTitle(innerPriceWordRe.ReplaceAllString(desc, " "))
	if desc == "" {
		return nil, Missing("description", `what is the item? For example "12 x colorbond sheets at $85.50"`)
	}
	in := map[string]any{"description": desc, "quantity": quantity, "unit_price_cents": cents}
	if unit != "" {
		in["unit"] = unit
	}
	return in, nil
}

var (
	trailingPriceWordRe = regexp.MustCompile(`(?i)\b(at|@|each|per\s+\w+|for)\s*$`)
	innerPriceWordRe    = regexp.MustCompile(`(?i)\s+(at|@|each)\s*($|,)`)
	termRe              = regexp.MustCompile(`(?i)(\d+)[\s-]*(years?|yrs?|months?)`)
	linkRe              = regexp.MustCompile(`https?://[^\s,]+`)
	lineItemSepRe       = regexp.MustCompile(`(?i)\s+(?:and|\+|&)\s+`)
)

// warrantyTerm writes a term as people read it: "10-year" → "10 years".
func warrantyTerm(s string) string {
	m := termRe.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	n, _ := strconv.Atoi(m[1])
	unit := "year"
	if strings.HasPrefix(strings.ToLower(m[2]), "m") {
		unit = "month"
	}
	return fmt.Sprintf("%d %s", n, brain.Plural(n, unit, unit+"s"))
}

func LinksIn(s string) []string { return linkRe.FindAllString(s, -1) }
