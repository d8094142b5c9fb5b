package registry

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Benchmarks of the registry's in-process hot paths. Each checks its result once, outside the timed loop,
// so a benchmark that measures the wrong thing (an input that fails validation, a registry that does not
// load) fails instead of reporting a number. Run them with
//
//	go test -run '^$' -bench . -benchmem ./registry/

// benchInputs are valid inputs for representative tools of the repository's registry, by tool name: small
// and large schemas, formats (uuid, date-time), patterns, enums, nested objects, arrays and numbers.
var benchInputs = []struct {
	tool  string
	input string
}{
	{"os.create_note", `{"domain": "business", "title": "Gutter quote for Ann",
		"content": "Ann wants a quote for 24 m of quad gutter at the back; the valley leaks when it rains hard.",
		"tags": ["gutters", "quote"], "entity_refs": [{"type": "lead", "id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}]}`},
	{"os.create_task", `{"title": "Call John about the roof", "domain": "business", "description": "He asked for a call back before Friday.",
		"priority": "high", "due_at": "2026-11-23T09:00:00+10:00", "context_ref": {"type": "lead", "id": "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"}}`},
	{"leads.create", `{"name": "Ann Lee", "phone": "0412 345 678", "email": "ann@example.com", "suburb": "Newtown",
		"address": "12 King St, Newtown NSW 2042", "source": "referral", "notes": "Leaking valley gutter at the back."}`},
	{"quote.add_line_item", `{"quote_id": "0d6b6f1e-5a36-4f0e-9f83-4b8f2f5d7c21", "description": "Replace quad gutter, 0.42 BMT Colorbond",
		"quantity": 24.5, "unit": "m", "unit_price_cents": 4850}`},
	{"invoice.add_payment", `{"invoice_id": "9a4c2d7e-1b3f-4e5a-8c6d-2f7e9b1a3c5d", "amount_cents": 250000, "method": "bank_transfer",
		"reference": "INV-1042 ANN LEE", "paid_at": "2026-11-22T10:00:00+10:00", "notes": "Paid in full."}`},
	{"memory.store", `{"agent": "office", "user_id": "u-42", "content": "Ann prefers calls after 3 pm on weekdays.", "kind": "preference",
		"tags": ["ann", "contact"], "importance": 0.8}`},
}

// benchInvalidInput breaks memory.store's input schema five ways: minLength, pattern, maximum, type and
// additionalProperties.
const benchInvalidInput = `{"user_id": "", "content": "Ann prefers calls after 3 pm.", "kind": "Not A Kind", "importance": 2,
	"tags": "ann", "extra": true}`

func loadBenchRegistry(b *testing.B) *Registry {
	b.Helper()
	r, err := Load(repoRegistry)
	require.NoError(b, err)
	return r
}

func BenchmarkValidateInput(b *testing.B) {
	r := loadBenchRegistry(b)

	for _, bi := range benchInputs {
		b.Run(bi.tool, func(b *testing.B) {
			tl, ok := r.Tool(bi.tool)
			require.True(b, ok, "tool %s is not in the registry", bi.tool)
			input := []byte(bi.input)
			require.NoError(b, tl.ValidateInput(input), "the benchmark's input must be valid")

			b.ReportAllocs()
			for b.Loop() {
				if err := tl.ValidateInput(input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}

	b.Run("invalid_memory.store", func(b *testing.B) {
		tl, ok := r.Tool("memory.store")
		require.True(b, ok)
		input := []byte(benchInvalidInput)
		var ve *ValidationError
		require.ErrorAs(b, tl.ValidateInput(input), &ve)
		keywords := make([]string, len(ve.Violations))
		for i, v := range ve.Violations {
			keywords[i] = v.Keyword
		}
		require.ElementsMatch(b, []string{"minLength", "pattern", "maximum", "type", "additionalProperties"}, keywords)

		b.ReportAllocs()
		for b.Loop() {
			if tl.ValidateInput(input) == nil {
				b.Fatal("the invalid input passed")
			}
		}
	})
}

// benchRef is a task's context_ref: the record it is about.
type benchRef struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// benchTask is shaped like the os.create_task handler's result: a task as GEM returns it.
type benchTask struct {
	TaskID         uuid.UUID  `json:"task_id"`
	Title          string     `json:"title"`
	Description    *string    `json:"description"`
	Domain         string     `json:"domain"`
	Priority       string     `json:"priority"`
	Status         string     `json:"status"`
	DueAt          *time.Time `json:"due_at"`
	ContextRef     *benchRef  `json:"context_ref"`
	CompletionNote *string    `json:"completion_note"`
	DeferReason    *string    `json:"defer_reason"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	CompletedAt    *time.Time `json:"completed_at"`
}

// benchReceipt returns the succeeded receipt of an os.create_task call.
func benchReceipt(b *testing.B, r *Registry) *Receipt {
	b.Helper()
	tl, ok := r.Tool("os.create_task")
	require.True(b, ok)

	started := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	due := started.Add(23 * time.Hour)
	desc := "He asked for a call back before Friday."
	task := &benchTask{
		TaskID: uuid.MustParse("2f1e6c1a-7d4b-4c8e-9a0f-3b5d7e9f1a2c"), Title: "Call John about the roof", Description: &desc,
		Domain: "business", Priority: "high", Status: "open", DueAt: &due,
		ContextRef: &benchRef{Type: "lead", ID: "5b0f1c39-8c8f-4a35-9d0e-6b1f1b7f3a10"},
		CreatedAt:  started.Add(2 * time.Millisecond), UpdatedAt: started.Add(2 * time.Millisecond),
	}
	result, err := json.Marshal(task)
	require.NoError(b, err)
	require.NoError(b, tl.ValidateOutput(result), "the benchmark's result must match os.create_task's output schema")

	effects := Effects{DBWrites: []DBWrite{{Table: "os_tasks", Op: "insert", Count: 1, IDs: []string{task.TaskID.String()}}}}
	return &Receipt{
		CallID:     uuid.MustParse("8c1d3e5f-7a9b-4c2d-8e0f-1a3b5c7d9e2f"),
		ToolName:   tl.Name,
		Status:     StatusSucceeded,
		Result:     result,
		Effects:    effects,
		Summary:    tl.Summarize(result, &effects),
		Attempt:    1,
		Worker:     "executor-7f3a",
		DurationMS: 4.217,
		StartedAt:  started,
		FinishedAt: started.Add(4217 * time.Microsecond),
	}
}

func BenchmarkReceiptEncode(b *testing.B) {
	r := loadBenchRegistry(b)
	rcpt := benchReceipt(b, r)

	// receipt is the whole receipt as JSON: what the brain's API returns, with the fields of the receipt's
	// NOTIFY payload (which the database builds).
	b.Run("receipt", func(b *testing.B) {
		data, err := json.Marshal(rcpt)
		require.NoError(b, err)
		var back Receipt
		require.NoError(b, json.Unmarshal(data, &back))
		require.Equal(b, rcpt.CallID, back.CallID)
		require.Equal(b, rcpt.Effects, back.Effects)
		require.Len(b, back.Summary, 2, "summary holds effects.db_writes and result.task_id")
		require.JSONEq(b, string(rcpt.Result), string(back.Result))
		require.True(b, rcpt.FinishedAt.Equal(back.FinishedAt))

		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := json.Marshal(rcpt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoadRegistry parses, checks and compiles the repository's registry: the start-up cost of every
// executor and brain.
func BenchmarkLoadRegistry(b *testing.B) {
	data, err := os.ReadFile(repoRegistry)
	require.NoError(b, err)
	var doc document
	require.NoError(b, json.NewDecoder(bytes.NewReader(data)).Decode(&doc))
	r, err := Parse(data)
	require.NoError(b, err)
	require.Equal(b, len(doc.Tools), r.Len(), "every tool of the file is loaded")

	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
