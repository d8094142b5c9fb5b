package businesspack

import "time"

// The invoice tools: a finished job billed, sent, chased and paid.
const (
	CreateInvoiceFromJob     = "invoice.create_from_job"
	SendInvoice              = "invoice.send"
	AddPayment               = "invoice.add_payment"
	MarkInvoiceOverdue       = "invoice.mark_overdue"
	SendInvoiceReminderSMS   = "invoice.send_reminder_sms"
	SendInvoiceReminderEmail = "invoice.send_reminder_email"
	ListOverdueInvoices      = "invoice.list_overdue"
)

// InvoiceTools are the invoice tools, in the registry's order.
var InvoiceTools = []string{CreateInvoiceFromJob, SendInvoice, AddPayment, MarkInvoiceOverdue, SendInvoiceReminderSMS,
	SendInvoiceReminderEmail, ListOverdueInvoices}

// Payment methods (invoice.add_payment's enum).
const (
	PaymentCash         = "cash"
	PaymentBankTransfer = "bank_transfer"
	PaymentCard         = "card"
	PaymentOther        = "other"
)

// Invoice is an invoice as the invoice tools return it (what the answer reads of it).
type Invoice struct {
	InvoiceID string `json:"invoice_id"`
	// Number is the invoice's number for people, when the result has it.
	Number *int64 `json:"number"`
	// TotalCents is what it bills, GST included, when the result has it.
	TotalCents   *int64 `json:"total_cents"`
	BalanceCents int64  `json:"balance_cents"`
	Status       string `json:"status"`
	// DueOn is the day payment is due (2006-01-02).
	DueOn string `json:"due_on"`
}

// InvoiceCreateFromJobInput is invoice.create_from_job's input.
type InvoiceCreateFromJobInput struct {
	JobID string `json:"job_id,omitempty"`
	// DueDays, when set, is sent even 0 (due today); left out, the tool's default.
	DueDays *int   `json:"due_days,omitempty"`
	Notes   string `json:"notes,omitempty"`
}

// InvoiceSendInput is invoice.send's input.
type InvoiceSendInput struct {
	InvoiceID       string `json:"invoice_id,omitempty"`
	Channel         string `json:"channel"`
	MessageOverride string `json:"message_override,omitempty"`
}

// InvoiceAddPaymentInput is invoice.add_payment's input.
type InvoiceAddPaymentInput struct {
	InvoiceID   string     `json:"invoice_id,omitempty"`
	AmountCents int64      `json:"amount_cents"`
	PaidAt      *time.Time `json:"paid_at,omitempty"`
	Method      string     `json:"method,omitempty"`
	Reference   string     `json:"reference,omitempty"`
	Notes       string     `json:"notes,omitempty"`
}

// InvoiceAddPaymentOutput is invoice.add_payment's result: the invoice as the payment left it.
type InvoiceAddPaymentOutput struct {
	Invoice *Invoice `json:"invoice"`
}

// InvoiceMarkOverdueInput is invoice.mark_overdue's input.
type InvoiceMarkOverdueInput struct {
	InvoiceID string     `json:"invoice_id,omitempty"`
	AsOf      *time.Time `json:"as_of,omitempty"`
}

// InvoiceSendReminderSMSInput is invoice.send_reminder_sms's input.
type InvoiceSendReminderSMSInput struct {
	InvoiceID  string `json:"invoice_id,omitempty"`
	To         string `json:"to"`
	Message    string `json:"message"`
	TemplateID string `json:"template_id,omitempty"`
}

// InvoiceSendReminderEmailInput is invoice.send_reminder_email's input.
type InvoiceSendReminderEmailInput struct {
	InvoiceID  string `json:"invoice_id,omitempty"`
	To         string `json:"to"`
	Subject    string `json:"subject"`
	Body       string `json:"body"`
	TemplateID string `json:"template_id,omitempty"`
}

// InvoiceListOverdueInput is invoice.list_overdue's input.
type InvoiceListOverdueInput struct {
	Limit int `json:"limit,omitempty"`
}

// InvoiceListOverdueOutput is invoice.list_overdue's result.
type InvoiceListOverdueOutput struct {
	Invoices []Invoice `json:"invoices"`
	Count    int       `json:"count"`
}
