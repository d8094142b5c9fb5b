package run

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
)

// receiptSentences turns a succeeded receipt's result into a sentence, per tool. Tools without an entry get
// a generic sentence from the receipt's summary. Add an entry here when a tool deserves better words.
var receiptSentences = map[string]func(res map[string]any) string{
	"os.health_check": func(res map[string]any) string {
		db, _ := res["database"].(map[string]any)
		return fmt.Sprintf("GEM is %s: the database answered in %v ms.", str(res["status"]), db["latency_ms"])
	},
	"os.create_task": func(res map[string]any) string {
		s := fmt.Sprintf("Created task “%s” (%s priority", str(res["title"]), str(res["priority"]))
		if due := str(res["due_at"]); due != "" {
			s += ", due " + humanTime(due)
		}
		return s + ")."
	},
	"os.create_note": func(res map[string]any) string {
		return fmt.Sprintf("Saved a %s note: “%s”.", str(res["kind"]), str(res["title"]))
	},
	"os.complete_task": func(res map[string]any) string {
		task, _ := res["task"].(map[string]any)
		if b, _ := res["already_completed"].(bool); b {
			return fmt.Sprintf("Task “%s” was already done.", str(task["title"]))
		}
		return fmt.Sprintf("Marked task “%s” done.", str(task["title"]))
	},
	"os.list_tasks": func(res map[string]any) string {
		return listSentence(res["tasks"], "task", "tasks", func(t map[string]any) string {
			s := fmt.Sprintf("%s (%s", str(t["title"]), str(t["priority"]))
			if due := str(t["due_at"]); due != "" {
				s += ", due " + humanTime(due)
			}
			return s + ")"
		})
	},
	"os.search_notes": func(res map[string]any) string {
		return listSentence(res["notes"], "note", "notes", func(n map[string]any) string { return str(n["title"]) })
	},
	"leads.create": func(res map[string]any) string {
		lead, _ := res["lead"].(map[string]any)
		if created, _ := res["created"].(bool); !created {
			return fmt.Sprintf("%s (%s) is already a lead, in stage %s.", str(lead["name"]), str(lead["phone"]), str(lead["stage"]))
		}
		s := fmt.Sprintf("Recorded a new lead: %s, %s", str(lead["name"]), str(lead["phone"]))
		if suburb := str(lead["suburb"]); suburb != "" {
			s += ", " + suburb
		}
		return s + fmt.Sprintf(" (source: %s).", str(lead["source"]))
	},
	"leads.update_stage": func(res map[string]any) string {
		lead, _ := res["lead"].(map[string]any)
		return fmt.Sprintf("Moved %s from %s to %s.", str(lead["name"]), str(res["previous_stage"]), str(lead["stage"]))
	},
	"os.create_reminder": func(res map[string]any) string {
		return fmt.Sprintf("I will remind you to %s on %s.", str(res["title"]), humanTime(str(res["remind_at"])))
	},
	"leads.schedule_inspection": func(res map[string]any) string {
		a := obj(res, "appointment")
		return fmt.Sprintf("Inspection booked for %s (%v minutes).", humanTime(str(a["scheduled_for"])), a["duration_minutes"])
	},
	"inspection.create": func(res map[string]any) string {
		return fmt.Sprintf("Started inspection %s.", str(res["inspection_id"]))
	},
	"quote.create_from_inspection": func(res map[string]any) string {
		q := obj(res, "quote")
		return fmt.Sprintf("Drafted quote %s (%s).", str(q["number"]), str(q["quote_id"]))
	},
	"quote.calculate_totals": func(res map[string]any) string {
		return fmt.Sprintf("Quote total %s: %s plus %s GST.", money(res["total_cents"]), money(res["subtotal_cents"]), money(res["gst_cents"]))
	},
	"job.create_from_accepted_quote": func(res map[string]any) string {
		j := obj(res, "job")
		return fmt.Sprintf("Job %s created (%s).", str(j["number"]), str(j["job_id"]))
	},
	"invoice.create_from_job": func(res map[string]any) string {
		i := obj(res, "invoice")
		return fmt.Sprintf("Invoice %s for %s, due %s.", str(i["number"]), money(i["total_cents"]), str(i["due_on"]))
	},
	"invoice.add_payment": func(res map[string]any) string {
		i, p := obj(res, "invoice"), obj(res, "payment")
		return fmt.Sprintf("Recorded %s on invoice %s; it is %s with %s left to pay.", money(p["amount_cents"]), str(i["number"]),
			strings.ReplaceAll(str(i["status"]), "_", " "), money(i["balance_cents"]))
	},
	"invoice.list_overdue": func(res map[string]any) string {
		return listSentence(res["invoices"], "overdue invoice", "overdue invoices", func(i map[string]any) string {
			return fmt.Sprintf("%s: %s owing, due %s", str(i["number"]), money(i["balance_cents"]), str(i["due_on"]))
		})
	},
	"leads.list_by_stage": func(res map[string]any) string {
		return listSentence(res["leads"], "lead", "leads", func(l map[string]any) string {
			return fmt.Sprintf("%s, %s (%s)", str(l["name"]), str(l["phone"]), str(l["stage"]))
		})
	},
}

func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// money formats cents as dollars: 280060 → $2,800.60.
func money(v any) string {
	f, ok := v.(float64)
	if !ok {
		return str(v)
	}
	cents := int64(f)
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

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

func humanTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Format("Mon 2 Jan 15:04")
}

func listSentence(items any, one, many string, line func(map[string]any) string) string {
	list, _ := items.([]any)
	if len(list) == 0 {
		return "No " + many + " found."
	}
	lines := []string{fmt.Sprintf("%d %s:", len(list), brain.Plural(len(list), one, many))}
	for i, it := range list {
		m, _ := it.(map[string]any)
		lines = append(lines, fmt.Sprintf("%d. %s", i+1, line(m)))
	}
	return strings.Join(lines, "\n")
}

// describeReceipts writes the assistant's answer from receipts, and suggests what to do next.
func describeReceipts(reg *registry.Registry, receipts []*registry.Receipt, pending []uuid.UUID) (string, []string) {
	var lines, next []string
	for _, r := range receipts {
		lines = append(lines, describeReceipt(r))
		next = append(next, nextActions(reg, r)...)
	}
	if len(pending) > 0 {
		lines = append(lines, fmt.Sprintf("%d %s still running; I stopped waiting.", len(pending), brain.Plural(len(pending), "call is", "calls are")))
		for _, id := range pending {
			next = append(next, fmt.Sprintf("receipt: GET /calls/%s?wait=5s", id))
		}
	}
	return strings.Join(lines, "\n"), next
}

func describeReceipt(r *registry.Receipt) string {
	switch r.Status {
	case registry.StatusSucceeded:
		var res map[string]any
		_ = json.Unmarshal(r.Result, &res)
		var s string
		if f, ok := receiptSentences[r.ToolName]; ok && res != nil {
			s = f(res)
		} else {
			s = fmt.Sprintf("%s succeeded%s.", r.ToolName, summaryText(r.Summary))
		}
		if r.IdempotencyHit {
			s += " (This repeats an earlier call; nothing was done twice.)"
		}
		return s
	case registry.StatusNotConfigured:
		var d registry.NotConfiguredDetails
		_ = json.Unmarshal(r.Error.Details, &d)
		s := fmt.Sprintf("%s is not configured: %s.", r.ToolName, strings.TrimSuffix(r.Error.Message, "."))
		if len(d.RequiredEnv) > 0 {
			s += " Set " + strings.Join(d.RequiredEnv, ", ") + "."
		}
		return s
	default:
		return fmt.Sprintf("%s failed (%s): %s", r.ToolName, r.Error.Code, r.Error.Message)
	}
}

func summaryText(sum map[string]any) string {
	if len(sum) == 0 {
		return ""
	}
	keys := make([]string, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", strings.TrimPrefix(k, "result."), compactAny(sum[k]))
	}
	return ": " + strings.Join(parts, ", ")
}

func compactAny(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
}

// nextActions suggests follow-ups to a receipt, only with tools the registry has.
func nextActions(reg *registry.Registry, r *registry.Receipt) []string {
	has := func(tool string) bool { _, ok := reg.Tool(tool); return ok }
	var res map[string]any
	_ = json.Unmarshal(r.Result, &res)
	switch {
	case r.Status == registry.StatusNotConfigured:
		var d registry.NotConfiguredDetails
		_ = json.Unmarshal(r.Error.Details, &d)
		return d.NextSteps
	case r.Status == registry.StatusFailed && r.Error.Code == registry.CodeValidation:
		return []string{fmt.Sprintf("fix the %s input (see the receipt's error details) and try again", r.ToolName)}
	case r.Status != registry.StatusSucceeded:
		return nil
	case r.ToolName == "os.create_task" && has("os.complete_task"):
		return []string{fmt.Sprintf("when it is done: \"complete task %s\"", str(res["task_id"]))}
	case r.ToolName == "leads.create" && has("leads.schedule_inspection"):
		lead, _ := res["lead"].(map[string]any)
		return []string{fmt.Sprintf("book an inspection: \"schedule an inspection for lead %s on friday\"", str(lead["lead_id"]))}
	case r.ToolName == "leads.create" && has("leads.update_stage"):
		lead, _ := res["lead"].(map[string]any)
		return []string{fmt.Sprintf("after contacting them: \"move lead %s to contacted\"", str(lead["lead_id"]))}
	}
	return nil
}
