package businesshandlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerInvoice(h executor.Handlers, p *pack) {
	h.Func(businesspack.CreateInvoiceFromJob, executor.Typed(p.createInvoiceFromJob))
	h.Func(businesspack.AddPayment, executor.Typed(p.addPayment))
	h.Func(businesspack.MarkInvoiceOverdue, executor.Typed(p.markOverdue))
	h.Func(businesspack.ListOverdueInvoices, executor.Typed(p.listOverdue))
	h.Add(businesspack.SendInvoice, executor.Handler{Run: executor.Typed(p.sendInvoice), Isolated: true,
		RequiredEnv: append(append([]string{}, businesspack.EmailRequiredEnv...), businesspack.SMSRequiredEnv...)})
	h.Add(businesspack.SendInvoiceReminderSMS, executor.Handler{Run: executor.Typed(p.sendInvoiceReminderSMS), Isolated: true, RequiredEnv: businesspack.SMSRequiredEnv})
	h.Add(businesspack.SendInvoiceReminderEmail, executor.Handler{Run: executor.Typed(p.sendInvoiceReminderEmail), Isolated: true, RequiredEnv: businesspack.EmailRequiredEnv})
}

// invoice is an invoice as the invoice tools return it.
// invoiceSelect reads invoices from irows (a CTE returning rows of invoices), with their quote and lead.
const invoiceSelect = `SELECT i.id, i.number, i.job_id, j.quote_id, q.lead_id, i.currency, i.subtotal_cents, i.gst_cents,
	i.total_cents, i.amount_paid_cents, i.balance_cents, i.status, i.issued_on, i.due_on, i.notes, i.sent_at, i.paid_at,
	i.overdue_at, i.created_at, i.updated_at
	FROM irows i JOIN jobs j ON j.id = i.job_id JOIN quotes q ON q.id = j.quote_id`

func scanInvoice(row pgx.Row) (businesspack.Invoice, error) {
	var v businesspack.Invoice
	err := row.Scan(&v.InvoiceID, &v.Number, &v.JobID, &v.QuoteID, &v.LeadID, &v.Currency, &v.SubtotalCents, &v.GSTCents,
		&v.TotalCents, &v.AmountPaidCents, &v.BalanceCents, &v.Status, &v.IssuedOn, &v.DueOn, &v.Notes, &v.SentAt, &v.PaidAt,
		&v.OverdueAt, &v.CreatedAt, &v.UpdatedAt)
	return v, err
}

// invoiceLabel is how paperwork and messages name an invoice.
func invoiceLabel(number int64) string { return fmt.Sprintf("INV-%04d", number) }

func lockInvoice(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Invoice, error) {
	v, err := scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (SELECT * FROM invoices WHERE id = $1 FOR UPDATE) `+invoiceSelect, id))
	if err != nil {
		return businesspack.Invoice{}, executor.NotFoundIfNoRows(err, "invoice", id)
	}
	return v, nil
}

type createInvoiceFromJobInput struct {
	JobID   uuid.UUID `json:"job_id"`
	DueDays *int      `json:"due_days"`
	Notes   *string   `json:"notes"`
}

// createInvoiceFromJob invoices a completed job for its accepted quote's totals, issued today and due in
// due_days (14 by default). A job has one invoice: asking for a second is a conflict that names the first.
func (p *pack) createInvoiceFromJob(ctx context.Context, c *executor.Call, in createInvoiceFromJobInput) (*businesspack.Invoice, error) {
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
	var existing uuid.UUID
	var number int64
	err = c.DB.QueryRow(ctx, `SELECT id, number FROM invoices WHERE job_id = $1`, in.JobID).Scan(&existing, &number)
	switch {
	case err == nil:
		return nil, &executor.Error{Code: registry.CodeConflict, Details: map[string]any{"invoice_id": existing},
			Message: fmt.Sprintf("job %s already has invoice %s (%s): a job is invoiced once", in.JobID, existing, invoiceLabel(number))}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, err
	}
	if j.Status != "completed" {
		return nil, executor.Conflict("job %s is %s: a job is invoiced once it is completed", in.JobID, j.Status)
	}
	// The quote is accepted, so its amounts cannot change (quotes_amounts_guard): no lock needed.
	var currency string
	var subtotal, gst, total int64
	err = c.DB.QueryRow(ctx, `SELECT currency, subtotal_cents, gst_cents, total_cents FROM quotes WHERE id = $1`, j.QuoteID).
		Scan(&currency, &subtotal, &gst, &total)
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "quote", j.QuoteID)
	}
	if total == 0 {
		return nil, executor.Conflict("quote %s totals $0.00: there is nothing to invoice", j.QuoteID)
	}
	v, err := scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (
			INSERT INTO invoices (job_id, currency, subtotal_cents, gst_cents, total_cents, issued_on, due_on, notes)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *) `+invoiceSelect,
		in.JobID, currency, subtotal, gst, total, today, today.AddDays(dueDays), in.Notes))
	if err != nil {
		return nil, err
	}
	return &v, nil
}

type addPaymentInput struct {
	InvoiceID   uuid.UUID  `json:"invoice_id"`
	AmountCents int64      `json:"amount_cents"`
	PaidAt      *time.Time `json:"paid_at"`
	Method      string     `json:"method"`
	Reference   *string    `json:"reference"`
	Notes       *string    `json:"notes"`
}

// addPayment records money received against an invoice; its balance and status follow. A payment larger
// than the balance is refused, and so is any payment on a paid invoice. A payment whose reference is
// already recorded on the invoice is the same payment: it is returned, not recorded twice.
func (p *pack) addPayment(ctx context.Context, c *executor.Call, in addPaymentInput) (*businesspack.InvoiceAddPaymentOutput, error) {
	if in.Method == "" {
		in.Method = "bank_transfer"
	}
	if in.Reference != nil && isBlankText(*in.Reference) {
		in.Reference = nil
	}
	paidAt := time.Now()
	if in.PaidAt != nil {
		paidAt = *in.PaidAt
	}
	if paidAt.After(time.Now().Add(time.Minute)) {
		return nil, executor.Invalid("paid_at %s is in the future: record a payment once it is received", paidAt.Format(time.RFC3339))
	}
	if _, err := p.today(); err != nil {
		return nil, err // the time zone is wrong: received_on cannot be worked out
	}
	receivedOn := businesspack.DateOf(paidAt.In(p.loc))
	v, err := lockInvoice(ctx, c, in.InvoiceID)
	if err != nil {
		return nil, err
	}
	out := businesspack.InvoiceAddPaymentOutput{InvoiceID: v.InvoiceID, PreviousStatus: v.Status}
	const paymentColumns = `id, amount_cents, method, reference, paid_at, received_on, notes`
	scan := func(row pgx.Row) error {
		return row.Scan(&out.PaymentID, &out.AmountCents, &out.Method, &out.Reference, &out.PaidAt, &out.ReceivedOn, &out.Notes)
	}
	if in.Reference != nil {
		err := scan(c.DB.QueryRow(ctx, `SELECT `+paymentColumns+` FROM invoice_payments WHERE invoice_id = $1 AND reference = $2`,
			in.InvoiceID, *in.Reference))
		switch {
		case err == nil && out.AmountCents != in.AmountCents:
			return nil, executor.Conflict("a payment with reference %q is already recorded on invoice %s for %d cents, not %d",
				*in.Reference, in.InvoiceID, out.AmountCents, in.AmountCents)
		case err == nil:
			out.Invoice = &v
			return &out, nil
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
	err = scan(c.DB.QueryRow(ctx, `INSERT INTO invoice_payments (invoice_id, amount_cents, method, reference, paid_at, received_on, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+paymentColumns,
		in.InvoiceID, in.AmountCents, in.Method, in.Reference, paidAt, receivedOn, in.Notes))
	if err != nil {
		return nil, err
	}
	// Paid in full: paid at the latest payment's time (payments may be recorded out of order).
	paid, err := scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (
			UPDATE invoices SET amount_paid_cents = amount_paid_cents + $2,
				paid_at = CASE WHEN amount_paid_cents + $2 = total_cents
					THEN (SELECT max(paid_at) FROM invoice_payments WHERE invoice_id = $1) END,
				updated_at = now()
			WHERE id = $1 RETURNING *) `+invoiceSelect, in.InvoiceID, in.AmountCents))
	if err != nil {
		return nil, err
	}
	out.Invoice, out.Created = &paid, true
	return &out, nil
}

type markOverdueOutput struct {
	businesspack.Invoice
	Changed     bool              `json:"changed"`
	AsOf        businesspack.Date `json:"as_of"`
	DaysOverdue int               `json:"days_overdue"`
}

// markOverdue marks an unpaid invoice overdue when its due date is before as_of (now by default; a date in
// the business's time zone). Paid, or not yet due on that date, is a conflict; already overdue is left as
// it is.
func (p *pack) markOverdue(ctx context.Context, c *executor.Call, in businesspack.InvoiceMarkOverdueInput) (*markOverdueOutput, error) {
	invoiceID, err := executor.RecordID("invoice_id", in.InvoiceID)
	if err != nil {
		return nil, err
	}
	if _, err := p.today(); err != nil {
		return nil, err
	}
	asOfTime := time.Now()
	if in.AsOf != nil {
		if in.AsOf.After(asOfTime.Add(time.Minute)) {
			return nil, executor.Invalid("as_of %s is in the future: an invoice is overdue only once its due date has passed",
				in.AsOf.Format(time.RFC3339))
		}
		asOfTime = *in.AsOf
	}
	asOf := businesspack.DateOf(asOfTime.In(p.loc))
	v, err := lockInvoice(ctx, c, invoiceID)
	if err != nil {
		return nil, err
	}
	switch {
	case v.Status == "paid":
		return nil, executor.Conflict("invoice %s is paid: it cannot be overdue", v.InvoiceID)
	case !v.DueOn.Before(asOf):
		return nil, executor.Conflict("invoice %s is due on %s: it is not overdue on %s", v.InvoiceID, v.DueOn, asOf)
	}
	out := markOverdueOutput{Invoice: v, AsOf: asOf, DaysOverdue: asOf.DaysSince(v.DueOn)}
	if v.OverdueAt != nil {
		return &out, nil
	}
	out.Invoice, err = scanInvoice(c.DB.QueryRow(ctx, `WITH irows AS (
			UPDATE invoices SET overdue_at = now(), updated_at = now() WHERE id = $1 RETURNING *) `+invoiceSelect, invoiceID))
	if err != nil {
		return nil, err
	}
	out.Changed = true
	return &out, nil
}

// listOverdue lists unpaid invoices past their due date, whether or not they were marked overdue, oldest
// due first, with what they owe in total.
func (p *pack) listOverdue(ctx context.Context, c *executor.Call, in businesspack.InvoiceListOverdueInput) (*businesspack.InvoiceListOverdueOutput, error) {
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	list, err := executor.QueryList(ctx, c.DB, func(row pgx.Row) (businesspack.OverdueInvoice, error) {
		v, err := scanInvoice(row)
		return businesspack.OverdueInvoice{Invoice: v, DaysOverdue: today.DaysSince(v.DueOn)}, err
	}, `WITH irows AS (SELECT * FROM invoices WHERE paid_at IS NULL AND due_on < $1) `+invoiceSelect+`
		ORDER BY i.due_on, i.number LIMIT $2`, today, executor.LimitOr(in.Limit, 50))
	if err != nil {
		return nil, err
	}
	out := businesspack.InvoiceListOverdueOutput{Invoices: list, Count: len(list), AsOf: today}
	if err := c.DB.QueryRow(ctx, `SELECT count(*), coalesce(sum(balance_cents), 0) FROM invoices WHERE paid_at IS NULL AND due_on < $1`,
		today).Scan(&out.TotalCount, &out.TotalOutstandingCents); err != nil {
		return nil, err
	}
	return &out, nil
}
