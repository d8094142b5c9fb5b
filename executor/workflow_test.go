package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

// chain holds the ids of one lead's way to a quote.
type chain struct {
	lead, inspection, quote string
}

// buildTo takes a new lead through the sales steps up to step: lead, inspection (a draft with a
// measurement), submitted, quote (a draft with a line, totals calculated), sent or accepted. The job and
// invoice steps are gem_job_test.go's jobTo.
func (b *testBundle) buildTo(t *testing.T, ctx context.Context, step string) chain {
	t.Helper()
	steps := []string{"lead", "inspection", "submitted", "quote", "sent", "accepted"}
	var c chain
	for _, s := range steps {
		switch s {
		case "lead":
			c.lead = b.newLead(t, ctx)
		case "inspection":
			r, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": c.lead})
			c.inspection = r.str(t, "inspection_id")
			b.ok(t, ctx, "inspection.add_measurement", J{"inspection_id": c.inspection, "label": "Roof area", "value": 100, "unit": "m2"})
		case "submitted":
			b.ok(t, ctx, "inspection.submit", J{"inspection_id": c.inspection})
		case "quote":
			r, _ := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": c.inspection})
			c.quote = r.str(t, "quote.quote_id")
			b.ok(t, ctx, "quote.add_line_item", J{"quote_id": c.quote, "description": "Roof restoration", "quantity": 100, "unit": "m2", "unit_price_cents": 5000})
			b.ok(t, ctx, "quote.calculate_totals", J{"quote_id": c.quote})
		case "sent":
			b.ok(t, ctx, "quote.mark_sent", J{"quote_id": c.quote})
		case "accepted":
			b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": c.quote})
		}
		if s == step {
			return c
		}
	}
	t.Fatalf("no workflow step %q", step)
	return c
}

func TestBusinessInvalidTransitions(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	draftInspection := b.buildTo(t, ctx, "inspection")
	empty, _ := b.ok(t, ctx, "inspection.create", J{"lead_id": draftInspection.lead})
	draftQuote := b.buildTo(t, ctx, "quote")
	sent := b.buildTo(t, ctx, "sent")
	accepted := b.buildTo(t, ctx, "accepted")
	declined := b.buildTo(t, ctx, "sent")
	b.ok(t, ctx, "quote.mark_declined", J{"quote_id": declined.quote, "reason": "too dear"})

	stale, _ := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": draftQuote.inspection})
	staleQuote := stale.str(t, "quote.quote_id")
	b.ok(t, ctx, "quote.add_line_item", J{"quote_id": staleQuote, "description": "x", "quantity": 1, "unit_price_cents": 100})
	noLines, _ := b.ok(t, ctx, "quote.create_from_inspection", J{"inspection_id": draftQuote.inspection})

	lostLead := b.newLead(t, ctx)
	b.ok(t, ctx, "leads.mark_lost", J{"lead_id": lostLead, "reason": "no answer", "reason_code": "no_response"})

	tests := []struct {
		name  string
		tool  string
		input J
		want  string
	}{
		{"quote from a draft inspection", "quote.create_from_inspection", J{"inspection_id": draftInspection.inspection}, "draft"},
		{"submit with nothing recorded", "inspection.submit", J{"inspection_id": empty.str(t, "inspection_id")}, "nothing recorded"},
		{"send with stale totals", "quote.mark_sent", J{"quote_id": staleQuote}, "stale"},
		{"send without lines", "quote.mark_sent", J{"quote_id": noLines.str(t, "quote.quote_id")}, "no line items"},
		{"send an accepted quote", "quote.mark_sent", J{"quote_id": accepted.quote}, "accepted"},
		{"decline an accepted quote", "quote.mark_declined", J{"quote_id": accepted.quote, "reason": "too dear"}, "accepted"},
		{"accept a declined quote", "quote.mark_accepted", J{"quote_id": declined.quote}, "declined"},
		{"add a line to a sent quote", "quote.add_line_item", J{"quote_id": sent.quote, "description": "extra", "quantity": 1, "unit_price_cents": 1}, "sent"},
		{"book a lost lead", "leads.schedule_inspection", J{"lead_id": lostLead, "preferred_window": J{"start": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}, "lost"},
		{"lose a won lead", "leads.mark_lost", J{"lead_id": accepted.lead, "reason": "changed mind"}, "won"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.refused(t, ctx, registry.CodeConflict, tt.tool, tt.input)
			require.Contains(t, r.Error.Message, tt.want)
		})
	}

	// The same move again is not a conflict: it changes nothing.
	r, rc := b.ok(t, ctx, "quote.mark_accepted", J{"quote_id": accepted.quote})
	require.Equal(t, false, r.get(t, "changed"))
	require.Equal(t, "accepted", r.str(t, "previous_status"))
	require.Empty(t, rc.Effects.DBWrites)
	r, rc = b.ok(t, ctx, "quote.mark_declined", J{"quote_id": declined.quote, "reason": "too dear"})
	require.Equal(t, false, r.get(t, "changed"))
	require.Empty(t, rc.Effects.DBWrites)
}
