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

// Invoice is an invoice as the invoice tools return it, with its job's quote and lead.
type Invoice struct {
	InvoiceID string `json:"invoice_id"`
	// Number is the invoice's number for people; nil in a result that does not say.
	Number        *int64 `json:"number"`
	JobID         string `json:"job_id"`
	QuoteID       string `json:"quote_id"`
	LeadID        string `json:"lead_id"`
	Currency      string `json:"currency"`
	SubtotalCents int64  `json:"subtotal_cents"`
	GSTCents      int64  `json:"gst_cents"`
	// TotalCents is what it bills, GST included; nil in a result that does not say.
	TotalCents      *int64 `json:"total_cents"`
	AmountPaidCents int64  `json:"amount_paid_cents"`
	BalanceCents    int64  `json:"balance_cents"`
	Status          string `json:"status"`
	// IssuedOn and DueOn are the days it was issued and payment is due.
	IssuedOn  Date       `json:"issued_on"`
	DueOn     Date       `json:"due_on"`
	Notes     *string    `json:"notes"`
	SentAt    *time.Time `json:"sent_at"`
	PaidAt    *time.Time `json:"paid_at"`
	OverdueAt *time.Time `json:"overdue_at"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
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

// InvoiceAddPaymentOutput is invoice.add_payment's result: the payment (the one recorded before with the
// same reference, when Created is false) and the invoice as the payment left it.
type InvoiceAddPaymentOutput struct {
	PaymentID   string    `json:"payment_id"`
	InvoiceID   string    `json:"invoice_id"`
	AmountCents int64     `json:"amount_cents"`
	Method      string    `json:"method"`
	Reference   *string   `json:"reference"`
	PaidAt      time.Time `json:"paid_at"`
	// ReceivedOn is the day it was received in the business's time zone.
	ReceivedOn     Date     `json:"received_on"`
	Notes          *string  `json:"notes"`
	Created        bool     `json:"created"`
	PreviousStatus string   `json:"previous_status"`
	Invoice        *Invoice `json:"invoice"`
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

// OverdueInvoice is an unpaid invoice past its due date, and by how many days on the day asked about.
type OverdueInvoice struct {
	Invoice
	DaysOverdue int `json:"days_overdue"`
}

// InvoiceListOverdueOutput is invoice.list_overdue's result: the invoices listed (oldest due first), and
// how many there are and what they owe in all, on AsOf.
type InvoiceListOverdueOutput struct {
	Invoices              []OverdueInvoice `json:"invoices"`
	Count                 int              `json:"count"`
	TotalCount            int64            `json:"total_count"`
	TotalOutstandingCents int64            `json:"total_outstanding_cents"`
	AsOf                  Date             `json:"as_of"`
}
