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

// humanTime is a time for people, in loc (results come back from PostgreSQL in UTC).
func humanTime(loc *time.Location) When {
	return func(t time.Time) string { return t.In(loc).Format("Mon 2 Jan 15:04") }
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
	switch {
	case r.Status == registry.StatusNotConfigured:
		var d registry.NotConfiguredDetails
		_ = json.Unmarshal(r.Error.Details, &d)
		return d.NextSteps
	case r.Status == registry.StatusFailed && r.Error.Code == registry.CodeValidation:
		return []string{fmt.Sprintf("fix the %s input (see the receipt's error details) and try again", r.ToolName)}
	case r.Status != registry.StatusSucceeded:
		return nil
	}
	return sentence.Next(input, r.Result, has)
}
