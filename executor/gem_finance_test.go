package executor_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestGEMFinanceAddExpense(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	f := b.jobTo(t, ctx, "job")

	r, rc := b.ok(t, ctx, "finance.add_expense", J{"amount_cents": 220_000, "gst_cents": 20_000, "incurred_on": "2025-02-11",
		"category": "materials", "supplier": "Stratco", "reference": "INV-9981", "job_id": f.job, "notes": "Colorbond sheets"})
	expense := r.str(t, "expense_id")
	require.Equal(t, int64(200_000), r.int(t, "ex_gst_cents"))
	require.Equal(t, "direct", r.str(t, "cost_type"))
	require.Equal(t, f.job, r.str(t, "job_id"))
	require.Equal(t, true, r.get(t, "created"))
	require.Equal(t, map[string]int{"expenses insert": 1}, writes(rc))
	require.Equal(t, expense, rc.Summary["result.expense_id"])

	// The supplier's reference once: the same expense again is returned; another one with it is a conflict.
	r, rc = b.ok(t, ctx, "finance.add_expense", J{"amount_cents": 220_000, "gst_cents": 20_000, "incurred_on": "2025-02-11",
		"category": "materials", "supplier": "STRATCO", "reference": "INV-9981"})
	require.Equal(t, expense, r.str(t, "expense_id"))
	require.Equal(t, false, r.get(t, "created"))
	require.Empty(t, rc.Effects.DBWrites)
	b.refused(t, ctx, registry.CodeConflict, "finance.add_expense", J{"amount_cents": 1, "incurred_on": "2025-02-11",
		"category": "materials", "supplier": "Stratco", "reference": "INV-9981"})
	// The same reference from another supplier is another expense.
	b.ok(t, ctx, "finance.add_expense", J{"amount_cents": 5_000, "incurred_on": "2025-02-11", "category": "fuel",
		"supplier": "BP", "reference": "INV-9981"})

	// GST-free by default; an overhead.
	r, _ = b.ok(t, ctx, "finance.add_expense", J{"amount_cents": 50_000, "incurred_on": "2025-01-15", "category": "insurance"})
	require.Equal(t, int64(0), r.int(t, "gst_cents"))
	require.Equal(t, "overhead", r.str(t, "cost_type"))

	// GST is at most an eleventh of the amount: 100 of 1,100 is fine, 101 is not.
	b.ok(t, ctx, "finance.add_expense", J{"amount_cents": 1_100, "gst_cents": 100, "incurred_on": "2025-02-11", "category": "tools"})
	b.refused(t, ctx, registry.CodeValidation, "finance.add_expense", J{"amount_cents": 1_100, "gst_cents": 101, "incurred_on": "2025-02-11", "category": "tools"})
	b.refused(t, ctx, registry.CodeValidation, "finance.add_expense", J{"amount_cents": 1_000,
		"incurred_on": time.Now().AddDate(0, 0, 3).Format(time.DateOnly), "category": "tools"})
	b.refused(t, ctx, registry.CodeValidation, "finance.add_expense", J{"amount_cents": 1_000, "incurred_on": "2025-02-11", "category": "lunch"})
	missing := uuid.NewString()
	r2 := b.refused(t, ctx, registry.CodeNotFound, "finance.add_expense", J{"amount_cents": 1_000, "incurred_on": "2025-02-11",
		"category": "tools", "job_id": missing})
	require.Contains(t, r2.Error.Message, missing)
}

func TestGEMFinanceSnapshots(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	// Three invoices of $8,236.33 ($7,487.57 + $748.76 GST), issued in February, March and April 2025.
	a := b.jobTo(t, ctx, "invoice")
	bb := b.jobTo(t, ctx, "invoice")
	c := b.jobTo(t, ctx, "invoice")
	for inv, dates := range map[string][2]string{a.invoice: {"2025-02-10", "2025-02-24"}, bb.invoice: {"2025-03-05", "2025-03-19"},
		c.invoice: {"2025-04-02", "2025-04-16"}} {
		_, err := b.pool.Exec(ctx, `UPDATE invoices SET issued_on = $2, due_on = $3 WHERE id = $1`, inv, dates[0], dates[1])
		require.NoError(t, err)
	}
	// Payments: received_on is the Sydney date (the last one is 21 March in Sydney, 20 March in UTC).
	for _, p := range []J{
		{"invoice_id": a.invoice, "amount_cents": 300_000, "method": "card", "paid_at": "2025-02-12T10:00:00+11:00"},
		{"invoice_id": a.invoice, "amount_cents": 523_633, "method": "bank_transfer", "paid_at": "2025-03-03T09:00:00+11:00"},
		{"invoice_id": bb.invoice, "amount_cents": 100_000, "method": "cash", "paid_at": "2025-03-20T21:00:00Z"},
		{"invoice_id": c.invoice, "amount_cents": 50_000, "method": "card", "paid_at": "2025-04-03T12:00:00+11:00"},
	} {
		b.ok(t, ctx, "invoice.add_payment", p)
	}
	// Expenses: two direct costs and fuel in the period, insurance before it.
	for _, e := range []J{
		{"amount_cents": 220_000, "gst_cents": 20_000, "incurred_on": "2025-02-11", "category": "materials", "supplier": "Stratco", "job_id": a.job},
		{"amount_cents": 110_000, "gst_cents": 10_000, "incurred_on": "2025-03-06", "category": "subcontractors", "supplier": "Ace Scaffolding"},
		{"amount_cents": 16_500, "gst_cents": 1_500, "incurred_on": "2025-03-10", "category": "fuel"},
		{"amount_cents": 50_000, "incurred_on": "2025-01-15", "category": "insurance"},
	} {
		b.ok(t, ctx, "finance.add_expense", e)
	}

	r, rc := b.ok(t, ctx, "finance.generate_cashflow_snapshot", J{"from": "2025-02-01", "to": "2025-03-31"})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "2025-02-01", r.str(t, "summary.from"))
	require.Equal(t, "AUD", r.str(t, "summary.currency"))
	require.Equal(t, int64(923_633), r.int(t, "summary.cash_in.total_cents"))
	require.Equal(t, int64(3), r.int(t, "summary.cash_in.count"))
	require.Equal(t, []any{
		J{"method": "bank_transfer", "amount_cents": num(523_633), "count": num(1)},
		J{"method": "card", "amount_cents": num(300_000), "count": num(1)},
		J{"method": "cash", "amount_cents": num(100_000), "count": num(1)},
	}, r.list(t, "summary.cash_in.by_method"))
	require.Equal(t, []any{
		J{"date": "2025-02-12", "amount_cents": num(300_000), "count": num(1)},
		J{"date": "2025-03-03", "amount_cents": num(523_633), "count": num(1)},
		J{"date": "2025-03-21", "amount_cents": num(100_000), "count": num(1)},
	}, r.list(t, "summary.cash_in.by_day"))
	require.Equal(t, []any{
		J{"week_start": "2025-02-10", "amount_cents": num(300_000), "count": num(1)},
		J{"week_start": "2025-03-03", "amount_cents": num(523_633), "count": num(1)},
		J{"week_start": "2025-03-17", "amount_cents": num(100_000), "count": num(1)},
	}, r.list(t, "summary.cash_in.by_week"))
	require.Equal(t, int64(346_500), r.int(t, "summary.cash_out.total_cents"))
	require.Equal(t, int64(31_500), r.int(t, "summary.cash_out.gst_cents"))
	require.Equal(t, []any{
		J{"category": "materials", "cost_type": "direct", "amount_cents": num(220_000), "count": num(1)},
		J{"category": "subcontractors", "cost_type": "direct", "amount_cents": num(110_000), "count": num(1)},
		J{"category": "fuel", "cost_type": "overhead", "amount_cents": num(16_500), "count": num(1)},
	}, r.list(t, "summary.cash_out.by_category"))
	require.Equal(t, []any{
		J{"month": "2025-02", "cash_in_cents": num(300_000), "cash_out_cents": num(220_000), "net_cents": num(80_000)},
		J{"month": "2025-03", "cash_in_cents": num(623_633), "cash_out_cents": num(126_500), "net_cents": num(497_133)},
	}, r.list(t, "summary.by_month"))
	require.Equal(t, int64(577_133), r.int(t, "summary.net_cents"))
	// On 31 March: A is paid; B owes $7,236.33 and was due on 19 March; C is not issued yet.
	require.Equal(t, J{"as_of": "2025-03-31", "outstanding_cents": num(723_633), "outstanding_count": num(1),
		"overdue_cents": num(723_633), "overdue_count": num(1)}, r.get(t, "summary.receivables"))

	// On 28 February only A was issued, and it still owed $5,236.33, due on the 24th.
	r, _ = b.ok(t, ctx, "finance.generate_cashflow_snapshot", J{"from": "2025-02-01", "to": "2025-02-28"})
	require.Equal(t, J{"as_of": "2025-02-28", "outstanding_cents": num(523_633), "outstanding_count": num(1),
		"overdue_cents": num(523_633), "overdue_count": num(1)}, r.get(t, "summary.receivables"))
	require.Equal(t, int64(80_000), r.int(t, "summary.net_cents"))

	r, _ = b.ok(t, ctx, "finance.generate_pnl_snapshot", J{"from": "2025-02-01", "to": "2025-03-31"})
	revenue, gross := int64(2*748_757), int64(2*748_757-300_000)
	require.Equal(t, int64(2), r.int(t, "summary.invoice_count"))
	require.Equal(t, revenue, r.int(t, "summary.revenue_cents"))
	require.Equal(t, int64(2*74_876), r.int(t, "summary.gst_collected_cents"))
	require.Equal(t, int64(2*823_633), r.int(t, "summary.invoiced_total_cents"))
	require.Equal(t, int64(3), r.int(t, "summary.expense_count"))
	require.Equal(t, int64(315_000), r.int(t, "summary.expenses_cents"))
	require.Equal(t, int64(31_500), r.int(t, "summary.expense_gst_cents"))
	require.Equal(t, int64(300_000), r.int(t, "summary.direct_costs_cents"))
	require.Equal(t, int64(15_000), r.int(t, "summary.overheads_cents"))
	require.Equal(t, gross, r.int(t, "summary.gross_profit_cents"))
	require.Equal(t, gross-15_000, r.int(t, "summary.net_profit_cents"))
	require.Equal(t, int64(2*74_876-31_500), r.int(t, "summary.gst_net_cents"))
	// 1,197,514 / 1,497,514 = 79.967% → 7,997 basis points.
	require.Equal(t, int64(7_997), r.int(t, "summary.gross_margin_basis_points"))
	require.Equal(t, []any{
		J{"category": "materials", "cost_type": "direct", "amount_cents": num(200_000), "count": num(1)},
		J{"category": "subcontractors", "cost_type": "direct", "amount_cents": num(100_000), "count": num(1)},
		J{"category": "fuel", "cost_type": "overhead", "amount_cents": num(15_000), "count": num(1)},
	}, r.list(t, "summary.expenses_by_category"))
	require.Equal(t, []any{
		J{"month": "2025-02", "invoice_count": num(1), "revenue_cents": num(748_757), "gst_collected_cents": num(74_876),
			"direct_costs_cents": num(200_000), "overheads_cents": num(0), "gross_profit_cents": num(548_757), "net_profit_cents": num(548_757)},
		J{"month": "2025-03", "invoice_count": num(1), "revenue_cents": num(748_757), "gst_collected_cents": num(74_876),
			"direct_costs_cents": num(100_000), "overheads_cents": num(15_000), "gross_profit_cents": num(648_757), "net_profit_cents": num(633_757)},
	}, r.list(t, "summary.by_month"))

	// A period with nothing in it: zeros, every month listed, no margin.
	r, _ = b.ok(t, ctx, "finance.generate_pnl_snapshot", J{"from": "2024-11-15", "to": "2024-12-31"})
	require.Equal(t, int64(0), r.int(t, "summary.revenue_cents"))
	require.Nil(t, r.get(t, "summary.gross_margin_basis_points"))
	require.Len(t, r.list(t, "summary.by_month"), 2)

	// Defaults: this month to date, in the business time zone.
	syd, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	today := time.Now().In(syd)
	for _, tool := range []string{"finance.generate_cashflow_snapshot", "finance.generate_pnl_snapshot"} {
		r, _ = b.ok(t, ctx, tool, J{})
		require.Equal(t, today.Format(time.DateOnly), r.str(t, "summary.to"), tool)
		require.Equal(t, today.Format("2006-01")+"-01", r.str(t, "summary.from"), tool)
		b.refused(t, ctx, registry.CodeValidation, tool, J{"from": "2025-03-01", "to": "2025-02-01"})
		b.refused(t, ctx, registry.CodeValidation, tool, J{"from": "2000-01-01", "to": "2025-02-01"})
	}
}

// num is a whole number as decoded results hold it.
func num(n int64) any { return json.Number(strconv.FormatInt(n, 10)) }
