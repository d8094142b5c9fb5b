package businesshandlers

// Finance: the business's expenses, and cash-flow and profit-and-loss snapshots built from invoices,
// payments and expenses. Money is integer cents (AUD); dates are calendar dates in the business's time
// zone (a payment counts on received_on, an invoice on issued_on, an expense on incurred_on).

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerFinance(h executor.Handlers, p *pack) {
	h.Func(businesspack.AddExpense, executor.Typed(p.addExpense))
	h.Func(businesspack.GenerateCashflowSnapshot, executor.Typed(p.cashflowSnapshot))
	h.Func(businesspack.GeneratePnLSnapshot, executor.Typed(p.pnlSnapshot))
}

// maxSnapshotDays bounds a snapshot's period (about ten years).
const maxSnapshotDays = 3660

type addExpenseInput struct {
	AmountCents int64             `json:"amount_cents"`
	GSTCents    int64             `json:"gst_cents"`
	IncurredOn  businesspack.Date `json:"incurred_on"`
	Category    string            `json:"category"`
	Supplier    *string           `json:"supplier"`
	Reference   *string           `json:"reference"`
	JobID       *uuid.UUID        `json:"job_id"`
	Notes       *string           `json:"notes"`
}

type expense struct {
	ExpenseID   uuid.UUID         `json:"expense_id"`
	Currency    string            `json:"currency"`
	AmountCents int64             `json:"amount_cents"`
	GSTCents    int64             `json:"gst_cents"`
	ExGSTCents  int64             `json:"ex_gst_cents"`
	IncurredOn  businesspack.Date `json:"incurred_on"`
	Category    string            `json:"category"`
	CostType    string            `json:"cost_type"`
	Supplier    *string           `json:"supplier"`
	Reference   *string           `json:"reference"`
	JobID       *uuid.UUID        `json:"job_id"`
	Notes       *string           `json:"notes"`
	CreatedAt   time.Time         `json:"created_at"`
}

const expenseColumns = `id, currency, amount_cents, gst_cents, amount_cents - gst_cents, incurred_on, category, cost_type, supplier,
	reference, job_id, notes, created_at`

func scanExpense(row pgx.Row) (expense, error) {
	var e expense
	err := row.Scan(&e.ExpenseID, &e.Currency, &e.AmountCents, &e.GSTCents, &e.ExGSTCents, &e.IncurredOn, &e.Category, &e.CostType,
		&e.Supplier, &e.Reference, &e.JobID, &e.Notes, &e.CreatedAt)
	return e, err
}

type addExpenseOutput struct {
	expense
	Created bool `json:"created"`
}

// addExpense records money spent. amount_cents includes GST; gst_cents is the GST in it (0, the default,
// for GST-free costs), at most one eleventh of the amount. A supplier's reference (their invoice number)
// is recorded once: the same expense again is returned, a different one with that reference is a conflict.
func (p *pack) addExpense(ctx context.Context, c *executor.Call, in addExpenseInput) (*addExpenseOutput, error) {
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	if in.IncurredOn.Time().After(today.Time()) {
		return nil, executor.Invalid("incurred_on %s is after today (%s): record an expense once it is incurred", in.IncurredOn, today)
	}
	// GST is a tenth of the price before GST, so at most an eleventh of a price that includes it.
	if in.GSTCents*11 > in.AmountCents+10 {
		return nil, executor.Invalid("gst_cents %d is more than one eleventh of amount_cents %d (GST is 10%% on top of the price)",
			in.GSTCents, in.AmountCents)
	}
	for _, s := range []**string{&in.Supplier, &in.Reference, &in.Notes} {
		if *s != nil && isBlankText(**s) {
			*s = nil
		}
	}
	if in.JobID != nil {
		var found bool
		if err := c.DB.QueryRow(ctx, `SELECT true FROM jobs WHERE id = $1 FOR KEY SHARE`, *in.JobID).Scan(&found); err != nil {
			return nil, executor.NotFoundIfNoRows(err, "job", *in.JobID)
		}
	}
	if in.Reference != nil {
		e, err := scanExpense(c.DB.QueryRow(ctx, `SELECT `+expenseColumns+` FROM expenses
			WHERE lower(coalesce(supplier, '')) = lower(coalesce($1, '')) AND reference = $2`, in.Supplier, *in.Reference))
		switch {
		case err == nil && e.AmountCents == in.AmountCents && e.GSTCents == in.GSTCents && e.IncurredOn.Equal(in.IncurredOn):
			return &addExpenseOutput{expense: e}, nil
		case err == nil:
			return nil, executor.Conflict("expense %s already has reference %q from this supplier, for %d cents on %s",
				e.ExpenseID, *in.Reference, e.AmountCents, e.IncurredOn)
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, err
		}
	}
	e, err := scanExpense(c.DB.QueryRow(ctx, `INSERT INTO expenses (amount_cents, gst_cents, incurred_on, category, supplier, reference, job_id, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+expenseColumns,
		in.AmountCents, in.GSTCents, in.IncurredOn, in.Category, in.Supplier, in.Reference, in.JobID, in.Notes))
	if err != nil {
		return nil, err
	}
	return &addExpenseOutput{expense: e, Created: true}, nil
}

// snapshotPeriod resolves a snapshot's dates: to defaults to today, from to the first day of to's month.
func (p *pack) snapshotPeriod(in businesspack.FinanceSnapshotInput) (from, to businesspack.Date, err error) {
	if to, err = p.today(); err != nil {
		return
	}
	if !in.To.IsZero() {
		to = in.To
	}
	from = to.AddDays(1 - to.Time().Day())
	if !in.From.IsZero() {
		from = in.From
	}
	switch {
	case to.Before(from):
		err = executor.Invalid("to %s is before from %s", to, from)
	case to.DaysSince(from) > maxSnapshotDays:
		err = executor.Invalid("from %s to %s is more than %d days: ask for a shorter period", from, to, maxSnapshotDays)
	}
	return
}

// financeMonths lists the months from's month to to's month, as "2006-01".
func financeMonths(from, to businesspack.Date) []string {
	var out []string
	for m := time.Date(from.Time().Year(), from.Time().Month(), 1, 0, 0, 0, 0, time.UTC); !m.After(to.Time()); m = m.AddDate(0, 1, 0) {
		out = append(out, m.Format("2006-01"))
	}
	return out
}

func financeMonth(d businesspack.Date) string { return d.Time().Format("2006-01") }

// financeWeek is the Monday starting d's week.
func financeWeek(d businesspack.Date) businesspack.Date {
	return d.AddDays(-((int(d.Time().Weekday()) + 6) % 7))
}

// tally adds an amount of n records to t.
func tally(t *businesspack.FinanceTally, cents int64, n int) {
	t.AmountCents += cents
	t.Count += n
}

// expenseRow is the expenses of one day and category.
type expenseRow struct {
	day         businesspack.Date
	category    string
	costType    string
	amountCents int64
	gstCents    int64
	count       int
}

func (p *pack) expenseRows(ctx context.Context, c *executor.Call, from, to businesspack.Date) ([]expenseRow, error) {
	return executor.QueryList(ctx, c.DB, func(row pgx.Row) (expenseRow, error) {
		var e expenseRow
		return e, row.Scan(&e.day, &e.category, &e.costType, &e.amountCents, &e.gstCents, &e.count)
	}, `SELECT incurred_on, category, cost_type, sum(amount_cents), sum(gst_cents), count(*) FROM expenses
		WHERE incurred_on BETWEEN $1 AND $2 GROUP BY 1, 2, 3 ORDER BY 1, 2`, from, to)
}

// categoryTallies sums expense rows by category (amounts as amountOf gives them), biggest first.
func categoryTallies(rows []expenseRow, amountOf func(expenseRow) int64) []businesspack.CategoryTally {
	out := []businesspack.CategoryTally{}
	index := map[string]int{}
	for _, e := range rows {
		i, ok := index[e.category]
		if !ok {
			i = len(out)
			index[e.category] = i
			out = append(out, businesspack.CategoryTally{Category: e.category, CostType: e.costType})
		}
		tally(&out[i].FinanceTally, amountOf(e), e.count)
	}
	sortTallies(out, func(t businesspack.CategoryTally) (int64, string) { return t.AmountCents, t.Category })
	return out
}

// sortTallies orders tallies by amount, biggest first, then by name.
func sortTallies[T any](list []T, key func(T) (int64, string)) {
	slices.SortStableFunc(list, func(a, b T) int {
		an, aName := key(a)
		bn, bName := key(b)
		return cmp.Or(cmp.Compare(bn, an), cmp.Compare(aName, bName))
	})
}

// cashflowSnapshot sums the money that came in (payments, by method, day, week and month) and went out
// (expenses, GST included, by category and month) between from and to, and what customers owed on to:
// outstanding and overdue receivables.
func (p *pack) cashflowSnapshot(ctx context.Context, c *executor.Call, in businesspack.FinanceSnapshotInput) (*businesspack.FinanceCashflowSnapshotOutput, error) {
	from, to, err := p.snapshotPeriod(in)
	if err != nil {
		return nil, err
	}
	s := businesspack.CashflowSummary{From: from, To: to, Currency: "AUD", Receivables: businesspack.Receivables{AsOf: to}}
	s.CashIn.ByMethod, s.CashIn.ByDay, s.CashIn.ByWeek = []businesspack.MethodTally{}, []businesspack.DayTally{}, []businesspack.WeekTally{}
	byMonth := map[string]*businesspack.CashMonth{}
	for _, m := range financeMonths(from, to) {
		s.ByMonth = append(s.ByMonth, businesspack.CashMonth{Month: m})
	}
	for i := range s.ByMonth {
		byMonth[s.ByMonth[i].Month] = &s.ByMonth[i]
	}

	type paymentRow struct {
		day    businesspack.Date
		method string
		cents  int64
		count  int
	}
	payments, err := executor.QueryList(ctx, c.DB, func(row pgx.Row) (paymentRow, error) {
		var r paymentRow
		return r, row.Scan(&r.day, &r.method, &r.cents, &r.count)
	}, `SELECT received_on, method, sum(amount_cents), count(*) FROM invoice_payments
		WHERE received_on BETWEEN $1 AND $2 GROUP BY 1, 2 ORDER BY 1, 2`, from, to)
	if err != nil {
		return nil, err
	}
	methods := map[string]int{}
	for _, r := range payments {
		s.CashIn.TotalCents += r.cents
		s.CashIn.Count += r.count
		if day, n := r.day, len(s.CashIn.ByDay); n == 0 || !s.CashIn.ByDay[n-1].Date.Equal(day) {
			s.CashIn.ByDay = append(s.CashIn.ByDay, businesspack.DayTally{Date: day})
		}
		tally(&s.CashIn.ByDay[len(s.CashIn.ByDay)-1].FinanceTally, r.cents, r.count)
		if w, n := financeWeek(r.day), len(s.CashIn.ByWeek); n == 0 || !s.CashIn.ByWeek[n-1].WeekStart.Equal(w) {
			s.CashIn.ByWeek = append(s.CashIn.ByWeek, businesspack.WeekTally{WeekStart: w})
		}
		tally(&s.CashIn.ByWeek[len(s.CashIn.ByWeek)-1].FinanceTally, r.cents, r.count)
		i, ok := methods[r.method]
		if !ok {
			i = len(s.CashIn.ByMethod)
			methods[r.method] = i
			s.CashIn.ByMethod = append(s.CashIn.ByMethod, businesspack.MethodTally{Method: r.method})
		}
		tally(&s.CashIn.ByMethod[i].FinanceTally, r.cents, r.count)
		byMonth[financeMonth(r.day)].CashInCents += r.cents
	}
	sortTallies(s.CashIn.ByMethod, func(t businesspack.MethodTally) (int64, string) { return t.AmountCents, t.Method })

	expenses, err := p.expenseRows(ctx, c, from, to)
	if err != nil {
		return nil, err
	}
	for _, e := range expenses {
		s.CashOut.TotalCents += e.amountCents
		s.CashOut.GSTCents += e.gstCents
		s.CashOut.Count += e.count
		byMonth[financeMonth(e.day)].CashOutCents += e.amountCents
	}
	s.CashOut.ByCategory = categoryTallies(expenses, func(e expenseRow) int64 { return e.amountCents })
	for i := range s.ByMonth {
		s.ByMonth[i].NetCents = s.ByMonth[i].CashInCents - s.ByMonth[i].CashOutCents
	}
	s.NetCents = s.CashIn.TotalCents - s.CashOut.TotalCents

	// What was owed at the end of to: invoices issued by then, less payments received by then.
	err = c.DB.QueryRow(ctx, `WITH owing AS (
			SELECT i.due_on, i.total_cents - coalesce((SELECT sum(amount_cents) FROM invoice_payments p
				WHERE p.invoice_id = i.id AND p.received_on <= $1), 0) AS cents
			FROM invoices i WHERE i.issued_on <= $1)
		SELECT coalesce(sum(cents), 0), count(*), coalesce(sum(cents) FILTER (WHERE due_on < $1), 0), count(*) FILTER (WHERE due_on < $1)
		FROM owing WHERE cents > 0`, to).Scan(&s.Receivables.OutstandingCents, &s.Receivables.OutstandingCount,
		&s.Receivables.OverdueCents, &s.Receivables.OverdueCount)
	if err != nil {
		return nil, err
	}
	return &businesspack.FinanceCashflowSnapshotOutput{Summary: s}, nil
}

// pnlSnapshot is the profit and loss between from and to: revenue is what was invoiced (by issue date)
// without GST; costs are expenses without GST, direct costs (the work) before gross profit and overheads
// after it; with the GST collected and paid, and each month.
func (p *pack) pnlSnapshot(ctx context.Context, c *executor.Call, in businesspack.FinanceSnapshotInput) (*businesspack.FinancePnLSnapshotOutput, error) {
	from, to, err := p.snapshotPeriod(in)
	if err != nil {
		return nil, err
	}
	s := businesspack.PnLSummary{From: from, To: to, Currency: "AUD"}
	byMonth := map[string]*businesspack.PnLMonth{}
	for _, m := range financeMonths(from, to) {
		s.ByMonth = append(s.ByMonth, businesspack.PnLMonth{Month: m})
	}
	for i := range s.ByMonth {
		byMonth[s.ByMonth[i].Month] = &s.ByMonth[i]
	}

	rows, err := c.DB.Query(ctx, `SELECT to_char(issued_on, 'YYYY-MM'), count(*), sum(subtotal_cents), sum(gst_cents), sum(total_cents)
		FROM invoices WHERE issued_on BETWEEN $1 AND $2 GROUP BY 1`, from, to)
	if err != nil {
		return nil, err
	}
	var month string
	var count int
	var subtotal, gst, total int64
	_, err = pgx.ForEachRow(rows, []any{&month, &count, &subtotal, &gst, &total}, func() error {
		m := byMonth[month]
		m.InvoiceCount += count
		m.RevenueCents += subtotal
		m.GSTCollectedCents += gst
		s.InvoiceCount += count
		s.RevenueCents += subtotal
		s.GSTCollectedCents += gst
		s.InvoicedTotalCents += total
		return nil
	})
	if err != nil {
		return nil, err
	}

	expenses, err := p.expenseRows(ctx, c, from, to)
	if err != nil {
		return nil, err
	}
	for _, e := range expenses {
		exGST := e.amountCents - e.gstCents
		m := byMonth[financeMonth(e.day)]
		if e.costType == "direct" {
			m.DirectCostsCents += exGST
			s.DirectCostsCents += exGST
		} else {
			m.OverheadsCents += exGST
			s.OverheadsCents += exGST
		}
		s.ExpenseCount += e.count
		s.ExpensesCents += exGST
		s.ExpenseGSTCents += e.gstCents
	}
	s.ExpensesByCategory = categoryTallies(expenses, func(e expenseRow) int64 { return e.amountCents - e.gstCents })
	for i := range s.ByMonth {
		m := &s.ByMonth[i]
		m.GrossProfitCents = m.RevenueCents - m.DirectCostsCents
		m.NetProfitCents = m.GrossProfitCents - m.OverheadsCents
	}
	s.GrossProfitCents = s.RevenueCents - s.DirectCostsCents
	s.NetProfitCents = s.GrossProfitCents - s.OverheadsCents
	s.GSTNetCents = s.GSTCollectedCents - s.ExpenseGSTCents
	if s.RevenueCents > 0 {
		// Rounded half away from zero to a whole basis point (0.01%).
		bp := s.GrossProfitCents * 10000
		if bp >= 0 {
			bp = (bp + s.RevenueCents/2) / s.RevenueCents
		} else {
			bp = (bp - s.RevenueCents/2) / s.RevenueCents
		}
		s.GrossMarginBasisPoints = &bp
	}
	return &businesspack.FinancePnLSnapshotOutput{Summary: s}, nil
}
