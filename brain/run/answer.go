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

// receiptSentences are the sentences of the tools whose packs do not give theirs yet (Sentence), read from
// the call's input and result as maps. They rely on GEM's contract: the input's properties, and the
// result's required ones (a richer result adds detail when it has it).
var receiptSentences = mapSentences(map[string]func(in, res map[string]any, when func(string) string) string{
	"leads.create": func(in, res map[string]any, when func(string) string) string {
		if created, ok := res["created"].(bool); ok && !created {
			return fmt.Sprintf("%s (%s) is already a lead (%s).", str(in["name"]), str(in["phone"]), str(res["lead_id"]))
		}
		s := fmt.Sprintf("Recorded a new lead: %s, %s, %s", str(in["name"]), str(in["phone"]), str(in["suburb"]))
		if src := str(in["source"]); src != "" {
			s += " (source: " + src + ")"
		}
		return s + "."
	},
	"leads.update_stage": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Moved lead %s to %s.", str(in["lead_id"]), strings.ReplaceAll(str(in["stage"]), "_", " "))
	},
	"leads.list_by_stage": func(in, res map[string]any, when func(string) string) string {
		return listSentence(res["leads"], "lead", "leads", func(l map[string]any) string {
			s := str(l["name"])
			if p := str(l["phone"]); p != "" {
				s += ", " + p
			}
			if st := firstStr(l, "stage", "status"); st != "" {
				s += " (" + st + ")"
			}
			return s
		})
	},
	"leads.schedule_inspection": func(in, res map[string]any, when func(string) string) string {
		w := obj(in, "preferred_window")
		return fmt.Sprintf("Inspection %s booked for %s.", str(res["inspection_id"]), when(str(w["start"])))
	},
	"inspection.create": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Started inspection %s.", str(res["inspection_id"]))
	},
	"quote.create_from_inspection": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Drafted quote %s.", str(res["quote_id"]))
	},
	"quote.calculate_totals": func(in, res map[string]any, when func(string) string) string {
		t := obj(res, "totals")
		gst := t["gst_cents"]
		if gst == nil {
			gst = t["tax_cents"]
		}
		return fmt.Sprintf("Quote total %s: %s plus %s GST.", money(t["total_cents"]), money(t["subtotal_cents"]), money(gst))
	},
	"job.create_from_accepted_quote": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Job %s created.", str(res["job_id"]))
	},
	"invoice.create_from_job": func(in, res map[string]any, when func(string) string) string {
		s := fmt.Sprintf("Invoice %s created", str(res["invoice_id"]))
		if total := firstNum(res, "total_cents"); total != nil {
			s += " for " + money(total)
		}
		return s + "."
	},
	"invoice.add_payment": func(in, res map[string]any, when func(string) string) string {
		s := fmt.Sprintf("Recorded %s on invoice %s", money(in["amount_cents"]), str(in["invoice_id"]))
		if inv := obj(res, "invoice"); inv != nil {
			s += fmt.Sprintf("; it is %s with %s left to pay", strings.ReplaceAll(str(inv["status"]), "_", " "), money(inv["balance_cents"]))
		}
		return s + "."
	},
	"inspection.add_measurement": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Recorded %s: %s %s.", str(in["label"]), str(in["value"]), str(in["unit"]))
	},
	"inspection.add_defect": func(in, res map[string]any, when func(string) string) string {
		s := fmt.Sprintf("Recorded a %s defect", str(in["category"]))
		if sev := str(in["severity"]); sev != "" {
			s = fmt.Sprintf("Recorded a %s-severity %s defect", sev, str(in["category"]))
		}
		if n := str(in["notes"]); n != "" {
			s += ": " + n
		}
		return s + "."
	},
	"inspection.add_checklist_item": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Checklist: %s is %s.", str(in["item_key"]), strings.ReplaceAll(str(in["status"]), "_", " "))
	},
	"inspection.lock": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Inspection %s is locked.", str(in["inspection_id"]))
	},
	"inspection.generate_scope_summary": func(in, res map[string]any, when func(string) string) string {
		return str(res["scope_text"])
	},
	"quote.mark_accepted": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Quote %s is accepted.", str(in["quote_id"]))
	},
	"quote.mark_declined": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Quote %s is declined: %s.", str(in["quote_id"]), strings.TrimSuffix(str(in["reason"]), "."))
	},
	"job.assign_dates": func(in, res map[string]any, when func(string) string) string {
		s := fmt.Sprintf("Job %s is scheduled from %s", str(in["job_id"]), str(in["start_date"]))
		if end := firstStr(res, "end_date"); end != "" && end != str(in["start_date"]) {
			s += " to " + end
		}
		return s + "."
	},
	"job.add_progress_update": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Recorded progress on job %s: %s.", str(in["job_id"]), strings.TrimSuffix(str(in["summary"]), "."))
	},
	"job.complete": func(in, res map[string]any, when func(string) string) string {
		return fmt.Sprintf("Job %s is completed.", str(in["job_id"]))
	},
	"finance.generate_cashflow_snapshot": func(in, res map[string]any, when func(string) string) string {
		sum := obj(res, "summary")
		return fmt.Sprintf("Cash flow %s to %s: %s in, %s out, %s net.", str(sum["from"]), str(sum["to"]),
			money(obj(sum, "cash_in")["total_cents"]), money(obj(sum, "cash_out")["total_cents"]), money(sum["net_cents"]))
	},
	"finance.generate_pnl_snapshot": func(in, res map[string]any, when func(string) string) string {
		sum := obj(res, "summary")
		return fmt.Sprintf("Profit and loss %s to %s: %s revenue, %s gross profit, %s net profit.", str(sum["from"]), str(sum["to"]),
			money(sum["revenue_cents"]), money(sum["gross_profit_cents"]), money(sum["net_profit_cents"]))
	},
	"invoice.list_overdue": func(in, res map[string]any, when func(string) string) string {
		return listSentence(res["invoices"], "overdue invoice", "overdue invoices", func(i map[string]any) string {
			return fmt.Sprintf("%s: %s owing, due %s", firstStr(i, "number", "invoice_id"), money(i["balance_cents"]), str(i["due_on"]))
		})
	},
})

// mapSentences makes Sentences of ones that read the input and result as maps.
func mapSentences(says map[string]func(in, res map[string]any, when func(string) string) string) Sentences {
	out := make(Sentences, len(says))
	for tool, say := range says {
		out[tool] = Sentence{say: func(rawIn, rawOut json.RawMessage, when When) (string, bool) {
			var in, res map[string]any
			_ = json.Unmarshal(rawOut, &res)
			_ = json.Unmarshal(rawIn, &in)
			if res == nil {
				return "", false
			}
			if in == nil {
				in = map[string]any{}
			}
			return say(in, res, func(t string) string { return saidTime(t, when) }), true
		}}
	}
	return out
}

func firstStr(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s := str(m[k]); s != "" {
			return s
		}
	}
	return ""
}

func firstNum(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k].(float64); ok {
			return v
		}
	}
	return nil
}

func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

// money formats cents read from a map as dollars (Money).
func money(v any) string {
	f, ok := v.(float64)
	if !ok {
		return str(v)
	}
	return Money(int64(f))
}

// Money formats cents as dollars: 280060 → $2,800.60.
func Money(cents int64) string {
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

// humanTime is a time for people, in loc (results come back from PostgreSQL in UTC).
func humanTime(loc *time.Location) When {
	return func(t time.Time) string { return t.In(loc).Format("Mon 2 Jan 15:04") }
}

// saidTime says a time written as text (RFC 3339), or the text as it is when it is not one.
func saidTime(s string, when When) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return when(t)
}

func listSentence(items any, one, many string, line func(map[string]any) string) string {
	list, _ := items.([]any)
	return List(list, one, many, func(it any) string {
		m, _ := it.(map[string]any)
		return line(m)
	})
}

// List says a list of what a call found: "No tasks found.", or how many, then one numbered line each.
func List[T any](items []T, one, many string, line func(T) string) string {
	if len(items) == 0 {
		return "No " + many + " found."
	}
	lines := []string{fmt.Sprintf("%d %s:", len(items), brain.Plural(len(items), one, many))}
	for i, it := range items {
		lines = append(lines, fmt.Sprintf("%d. %s", i+1, line(it)))
	}
	return strings.Join(lines, "\n")
}

// describeReceipts writes the assistant's answer from receipts (and the inputs of their calls), and
// suggests what to do next.
func describeReceipts(reg *registry.Registry, sentences Sentences, inputs map[uuid.UUID]json.RawMessage, receipts []*registry.Receipt, pending []uuid.UUID, loc *time.Location) (string, []string) {
	var lines, next []string
	when := humanTime(loc)
	for _, r := range receipts {
		lines = append(lines, describeReceipt(r, sentences[r.ToolName], inputs[r.CallID], when))
		next = append(next, nextActions(reg, sentences[r.ToolName], r, inputs[r.CallID])...)
	}
	if len(pending) > 0 {
		lines = append(lines, fmt.Sprintf("%d %s still running; I stopped waiting.", len(pending), brain.Plural(len(pending), "call is", "calls are")))
		for _, id := range pending {
			next = append(next, fmt.Sprintf("receipt: GET /calls/%s?wait=5s", id))
		}
	}
	return strings.Join(lines, "\n"), next
}

func describeReceipt(r *registry.Receipt, sentence Sentence, input json.RawMessage, when When) string {
	switch r.Status {
	case registry.StatusSucceeded:
		s, said := sentence.Say(input, r.Result, when)
		switch files := r.Effects.FilesWritten; {
		case said:
		case len(files) > 0:
			s = filesSentence(r.ToolName, files)
		default:
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

// filesSentence names the files a call wrote and where a person finds them: a ref "gemfs://<file>" is the
// file <file> in the executor's file store directory (GEM_FILE_STORE).
func filesSentence(tool string, files []registry.FileWritten) string {
	parts := make([]string, len(files))
	for i, f := range files {
		name := f.Name
		if name == "" {
			name = "a file"
		}
		parts[i] = fmt.Sprintf("%s (%s) as %s", name, byteSize(f.Bytes), f.Ref)
	}
	return fmt.Sprintf("%s wrote %s. A gemfs://<file> ref is the file <file> in the executor's file store "+
		"(GEM_FILE_STORE, default .gem/files in the executor's working folder).", tool, strings.Join(parts, ", "))
}

// byteSize is a size for people: 950 bytes, 2.2 KB, 1.4 MB.
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
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
func nextActions(reg *registry.Registry, sentence Sentence, r *registry.Receipt, input json.RawMessage) []string {
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
	case sentence.next != nil:
		return sentence.Next(input, r.Result, has)
	case r.ToolName == "leads.create" && has("leads.schedule_inspection"):
		return []string{fmt.Sprintf("book an inspection: \"schedule an inspection for lead %s on friday\"", str(res["lead_id"]))}
	case r.ToolName == "leads.create" && has("leads.update_stage"):
		return []string{fmt.Sprintf("after contacting them: \"move lead %s to contacted\"", str(res["lead_id"]))}
	}
	return nil
}
