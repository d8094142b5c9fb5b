package business

import (
	"context"
	"errors"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerInvoice(h executor.Handlers, p *pack) {
	h.Func("invoice.create_from_job", executor.Typed(p.createInvoiceFromJob))
	h.Func("invoice.add_payment", executor.Typed(p.addPayment))
	h.Func("invoice.mark_overdue", executor.Typed(p.markOverdue))
	h.Func("invoice.list_overdue", executor.Typed(p.listOverdue))
}

type invoice struct {
	InvoiceID       uuid.UUID  `json:"invoice_id"`
	Number          int64      `json:"number"`
	JobID           uuid.UUID  `json:"job_id"`
	QuoteID         uuid.UUID  `json:"quote_id"`
	LeadID          uuid.UUID  `json:"lead_id"`
	Currency        string     `json:"currency"`
	SubtotalCents   int64      `json:"subtotal_cents"`
	GSTCents        int64      `json:"gst_cents"`
	TotalCents      int64      `json:"total_cents"`
	AmountPaidCents int64      `json:"amount_paid_cents"`
	BalanceCents    int64      `json:"balance_cents"`
	Status          string     `json:"status"`
	IssuedOn        civilDate  `json:"issued_on"`
	DueOn           civilDate  `json:"due_on"`
	PaidAt          *time.Time `json:"paid_at"`
	OverdueAt       *time.Time `json:"overdue_at"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// invoiceSelect reads invoices from irows (a CTE returning rows of invoices), with their quote and lead.
const invoiceSelect = `SELECT i.id, i.number, i.job_id, j.quote_id, q.lead_id, i.currency, i.subtotal_cents, i.gst_cents,
	i.total_cents, i.amount_paid_cents, i.balance_cents, i.status, i.issued_on, i.due_on, i.paid_at, i.overdue_at,
	i.created_at, i.updated_at
	FROM irows i JOIN jobs j ON j.id = i.job_id JOIN quotes q ON q.id = j.quote_id`

func scanInvoice(row pgx.Row) (invoice, error) {
	var v invoice
	err := row.Scan(&v.InvoiceID, &v.Number, &v.JobID, &v.QuoteID, &v.LeadID, &v.Currency, &v.SubtotalCents, &v.GSTCents,
		&v.TotalCents, &v.AmountPaidCents, &v.BalanceCents, &v.Status, &v.IssuedOn, &v.DueOn, &v.PaidAt, &v.OverdueAt,
		&v.CreatedAt, &v.UpdatedAt)
	return v, err
}

func lockInvoice(ctx context.Context, c *executor.Call, id uuid.UUID) (invoice, error) {
	v, err := scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (SELECT * FROM invoices WHERE id = $1 FOR UPDATE) `+invoiceSelect, id))
	if err != nil {
		return invoice{}, notFoundIfNoRows(err, "invoice", id)
	}
	return v, nil
}

type invoiceCreated struct {
	Invoice invoice `json:"invoice"`
	Created bool    `json:"created"`
}

type createInvoiceFromJobInput struct {
	JobID   uuid.UUID `json:"job_id"`
	DueDays *int      `json:"due_days"`
}

// createInvoiceFromJob invoices a completed job for its accepted quote's totals, issued today and due in
// due_days (14 by default). A job has one invoice: asking again returns it.
func (p *pack) createInvoiceFromJob(ctx context.Context, c *executor.Call, in createInvoiceFromJobInput) (*invoiceCreated, error) {
	dueDays := 14
	if in.DueDays != nil {
		dueDays = *in.DueDays
	}
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	j, err := lockJob(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	v, err := scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (SELECT * FROM invoices WHERE job_id = $1) `+invoiceSelect, in.JobID))
	if err == nil {
		return &invoiceCreated{Invoice: v}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if j.Status != "completed" {
		return nil, executor.Conflict("job %s is %s: a job is invoiced once it is completed", in.JobID, j.Status)
	}
	// The quote is accepted, so its amounts cannot change (quotes_amounts_guard): no lock needed.
	q, err := scanQuote(c.DB.QueryRow(ctx, `SELECT `+quoteColumns+` FROM quotes WHERE id = $1`, j.QuoteID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "quote", j.QuoteID)
	}
	if q.TotalCents == 0 {
		return nil, executor.Conflict("quote %s totals $0.00: there is nothing to invoice", q.QuoteID)
	}
	v, err = scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (
			INSERT INTO invoices (job_id, currency, subtotal_cents, gst_cents, total_cents, issued_on, due_on)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *) `+invoiceSelect,
		in.JobID, q.Currency, q.SubtotalCents, q.GSTCents, q.TotalCents, today, today.addDays(dueDays)))
	if err != nil {
		return nil, err
	}
	return &invoiceCreated{Invoice: v, Created: true}, nil
}

type payment struct {
	PaymentID   uuid.UUID `json:"payment_id"`
	AmountCents int64     `json:"amount_cents"`
	Method      string    `json:"method"`
	Reference   *string   `json:"reference"`
	ReceivedOn  civilDate `json:"received_on"`
	Notes       *string   `json:"notes"`
	CreatedAt   time.Time `json:"created_at"`
}

const paymentColumns = `id, amount_cents, method, reference, received_on, notes, created_at`

func scanPayment(row pgx.Row) (payment, error) {
	var p payment
	return p, row.Scan(&p.PaymentID, &p.AmountCents, &p.Method, &p.Reference, &p.ReceivedOn, &p.Notes, &p.CreatedAt)
}

type addPaymentOutput struct {
	Invoice        invoice `json:"invoice"`
	Payment        payment `json:"payment"`
	Created        bool    `json:"created"`
	PreviousStatus string  `json:"previous_status"`
}

type addPaymentInput struct {
	InvoiceID   uuid.UUID  `json:"invoice_id"`
	AmountCents int64      `json:"amount_cents"`
	Method      string     `json:"method"`
	Reference   *string    `json:"reference"`
	ReceivedOn  *civilDate `json:"received_on"`
	Notes       *string    `json:"notes"`
}

// addPayment records money received against an invoice; its balance and status follow. A payment larger
// than the balance is refused, and so is any payment on a paid invoice. A payment whose reference is
// already recorded on the invoice is not recorded twice.
func (p *pack) addPayment(ctx context.Context, c *executor.Call, in addPaymentInput) (*addPaymentOutput, error) {
	if in.Method == "" {
		in.Method = "bank_transfer"
	}
	if in.ReceivedOn == nil {
		today, err := p.today()
		if err != nil {
			return nil, err
		}
		in.ReceivedOn = &today
	}
	v, err := lockInvoice(ctx, c, in.InvoiceID)
	if err != nil {
		return nil, err
	}
	previous := v.Status
	if in.Reference != nil {
		pay, err := scanPayment(c.DB.QueryRow(ctx, `SELECT `+paymentColumns+` FROM invoice_payments
			WHERE invoice_id = $1 AND reference = $2`, in.InvoiceID, *in.Reference))
		switch {
		case err == nil && pay.AmountCents != in.AmountCents:
			return nil, executor.Conflict("a payment with reference %q is already recorded on invoice %s for %d cents, not %d",
				*in.Reference, in.InvoiceID, pay.AmountCents, in.AmountCents)
		case err == nil:
			return &addPaymentOutput{Invoice: v, Payment: pay, PreviousStatus: previous}, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, err
		}
	}
	switch {
	case v.Status == "paid":
		return nil, executor.Conflict("invoice %s is already paid", in.InvoiceID)
	case in.AmountCents > v.BalanceCents:
		return nil, executor.Conflict("payment of %d cents is more than invoice %s's balance of %d cents: overpayment is refused",
			in.AmountCents, in.InvoiceID, v.BalanceCents)
	}
	pay, err := scanPayment(c.DB.QueryRow(ctx, `INSERT INTO invoice_payments (invoice_id, amount_cents, method, reference, received_on, notes)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+paymentColumns,
		in.InvoiceID, in.AmountCents, in.Method, in.Reference, *in.ReceivedOn, in.Notes))
	if err != nil {
		return nil, err
	}
	v, err = scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (
			UPDATE invoices SET amount_paid_cents = amount_paid_cents + $2,
				paid_at = CASE WHEN amount_paid_cents + $2 = total_cents THEN now() END, updated_at = now()
			WHERE id = $1 RETURNING *) `+invoiceSelect, in.InvoiceID, in.AmountCents))
	if err != nil {
		return nil, err
	}
	return &addPaymentOutput{Invoice: v, Payment: pay, Created: true, PreviousStatus: previous}, nil
}

type markOverdueOutput struct {
	Marked []invoice `json:"marked"`
	Count  int       `json:"count"`
	AsOf   civilDate `json:"as_of"`
}

type markOverdueInput struct {
	InvoiceID *uuid.UUID `json:"invoice_id"`
}

// markOverdue marks unpaid invoices whose due date has passed (in the business's time zone) overdue: one
// invoice, or with no invoice_id every such invoice. Marking one that is not yet due, or paid, is a
// conflict; one already overdue is left as it is.
func (p *pack) markOverdue(ctx context.Context, c *executor.Call, in markOverdueInput) (*markOverdueOutput, error) {
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	if in.InvoiceID != nil {
		v, err := lockInvoice(ctx, c, *in.InvoiceID)
		if err != nil {
			return nil, err
		}
		switch {
		case v.Status == "paid":
			return nil, executor.Conflict("invoice %s is paid: it cannot be overdue", v.InvoiceID)
		case !v.DueOn.before(today):
			return nil, executor.Conflict("invoice %s is due on %s: it is not overdue on %s", v.InvoiceID, v.DueOn, today)
		}
	}
	marked, err := queryList(ctx, c, scanInvoice, `WITH irows AS (
			UPDATE invoices SET overdue_at = now(), updated_at = now()
			WHERE ($1::uuid IS NULL OR id = $1) AND paid_at IS NULL AND overdue_at IS NULL AND due_on < $2
			RETURNING *) `+invoiceSelect+` ORDER BY i.due_on, i.number`, in.InvoiceID, today)
	if err != nil {
		return nil, err
	}
	return &markOverdueOutput{Marked: marked, Count: len(marked), AsOf: today}, nil
}

type listOverdueInput struct {
	Limit int `json:"limit"`
}

// listOverdue lists unpaid invoices past their due date, whether or not they were marked overdue, oldest
// due first, with what they owe in total.
func (p *pack) listOverdue(ctx context.Context, c *executor.Call, in listOverdueInput) (any, error) {
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	type overdueInvoice struct {
		invoice
		DaysOverdue int `json:"days_overdue"`
	}
	list, err := queryList(ctx, c, func(row pgx.Row) (overdueInvoice, error) {
		v, err := scanInvoice(row)
		return overdueInvoice{invoice: v, DaysOverdue: int(today.t.Sub(v.DueOn.t).Hours() / 24)}, err
	}, `WITH irows AS (SELECT * FROM invoices WHERE paid_at IS NULL AND due_on < $1) `+invoiceSelect+`
		ORDER BY i.due_on, i.number LIMIT $2`, today, limitOr(in.Limit, 50))
	if err != nil {
		return nil, err
	}
	var total, outstanding int64
	if err := c.DB.QueryRow(ctx, `SELECT count(*), coalesce(sum(balance_cents), 0) FROM invoices WHERE paid_at IS NULL AND due_on < $1`,
		today).Scan(&total, &outstanding); err != nil {
		return nil, err
	}
	return map[string]any{"invoices": list, "count": len(list), "total_count": total, "total_outstanding_cents": outstanding, "as_of": today}, nil
}
