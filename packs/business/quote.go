package businesspack

import (
	"encoding/json"
	"time"
)

// The quote tools: a quote drafted from an inspection, priced, sent and answered.
const (
	CreateQuoteFromInspection = "quote.create_from_inspection"
	UpdateLineItems           = "quote.update_line_items"
	CalculateQuoteTotals      = "quote.calculate_totals"
	GenerateQuotePDF          = "quote.generate_pdf"
	SendQuoteToClient         = "quote.send_to_client"
	MarkQuoteAccepted         = "quote.mark_accepted"
	MarkQuoteDeclined         = "quote.mark_declined"
	AddLineItem               = "quote.add_line_item"
	UpdateLineItem            = "quote.update_line_item"
	MarkQuoteSent             = "quote.mark_sent"
)

// QuoteTools are the quote tools, in the registry's order.
var QuoteTools = []string{CreateQuoteFromInspection, UpdateLineItems, CalculateQuoteTotals, GenerateQuotePDF, SendQuoteToClient,
	MarkQuoteAccepted, MarkQuoteDeclined, AddLineItem, UpdateLineItem, MarkQuoteSent}

// Channels a quote, an invoice or a review request is sent by (their tools' channel enum).
const (
	ChannelEmail = "email"
	ChannelSMS   = "sms"
	ChannelBoth  = "both"
)

// QuoteCreateFromInspectionInput is quote.create_from_inspection's input.
type QuoteCreateFromInspectionInput struct {
	InspectionID   string `json:"inspection_id,omitempty"`
	PricingProfile string `json:"pricing_profile,omitempty"`
	Notes          string `json:"notes,omitempty"`
	ValidDays      int    `json:"valid_days,omitempty"`
	CustomerID     string `json:"customer_id,omitempty"`
}

// Quote is a quote as the quote tools return it.
type Quote struct {
	QuoteID        string  `json:"quote_id"`
	Number         int64   `json:"number"`
	LeadID         string  `json:"lead_id"`
	InspectionID   string  `json:"inspection_id"`
	CustomerID     *string `json:"customer_id"`
	Status         string  `json:"status"`
	Currency       string  `json:"currency"`
	PricingProfile *string `json:"pricing_profile"`
	SubtotalCents  int64   `json:"subtotal_cents"`
	GSTCents       int64   `json:"gst_cents"`
	TotalCents     int64   `json:"total_cents"`
	// TotalsStale says the lines changed since the totals were worked out (quote.calculate_totals).
	TotalsStale bool `json:"totals_stale"`
	// ValidUntil is the quote's last valid day.
	ValidUntil    Date       `json:"valid_until"`
	Notes         *string    `json:"notes"`
	SentAt        *time.Time `json:"sent_at"`
	SentVia       *string    `json:"sent_via"`
	AcceptedAt    *time.Time `json:"accepted_at"`
	DeclinedAt    *time.Time `json:"declined_at"`
	DeclineReason *string    `json:"decline_reason"`
	DecisionNotes *string    `json:"decision_notes"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// QuoteLineItem is a quote's line as stored, with its place and total.
type QuoteLineItem struct {
	LineItemID  string `json:"line_item_id"`
	QuoteID     string `json:"quote_id"`
	Position    int    `json:"position"`
	Description string `json:"description"`
	// Quantity is exact, as stored (up to three decimals): 2, not 2.000.
	Quantity       json.Number `json:"quantity"`
	Unit           string      `json:"unit"`
	UnitPriceCents int64       `json:"unit_price_cents"`
	LineTotalCents int64       `json:"line_total_cents"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// QuoteCreateFromInspectionOutput is quote.create_from_inspection's result: the draft quote and its lines.
type QuoteCreateFromInspectionOutput struct {
	QuoteID             string          `json:"quote_id"`
	Quote               Quote           `json:"quote"`
	LineItems           []QuoteLineItem `json:"line_items"`
	InspectionLockedNow bool            `json:"inspection_locked_now"`
}

// QuoteUpdateLineItemsOutput is quote.update_line_items' result: the quote's lines now.
type QuoteUpdateLineItemsOutput struct {
	QuoteID     string          `json:"quote_id"`
	LineItems   []QuoteLineItem `json:"line_items"`
	Changed     bool            `json:"changed"`
	TotalsStale bool            `json:"totals_stale"`
}

// QuoteAddLineItemOutput is quote.add_line_item's result.
type QuoteAddLineItemOutput struct {
	LineItem    QuoteLineItem `json:"line_item"`
	TotalsStale bool          `json:"totals_stale"`
}

// QuoteUpdateLineItemOutput is quote.update_line_item's result: the line and the fields that changed.
type QuoteUpdateLineItemOutput struct {
	LineItem      QuoteLineItem `json:"line_item"`
	UpdatedFields []string      `json:"updated_fields"`
}

// QuoteTransitionOutput is the result of quote.mark_sent, mark_accepted and mark_declined: the quote, the
// status it left and its lead's stage now.
type QuoteTransitionOutput struct {
	QuoteID        string `json:"quote_id"`
	Quote          Quote  `json:"quote"`
	PreviousStatus string `json:"previous_status"`
	Changed        bool   `json:"changed"`
	LeadStage      string `json:"lead_stage"`
}

// LineItem is a quote's line: what, how many (1 when the message says no number) and the unit price
// without GST.
type LineItem struct {
	Description    string  `json:"description"`
	Quantity       float64 `json:"quantity"`
	Unit           string  `json:"unit,omitempty"`
	UnitPriceCents int64   `json:"unit_price_cents"`
}

// QuoteAddLineItemInput is quote.add_line_item's input.
type QuoteAddLineItemInput struct {
	QuoteID string `json:"quote_id,omitempty"`
	LineItem
}

// QuoteLine is a line of quote.update_line_items: a new one, or an existing one kept (LineItemID).
type QuoteLine struct {
	LineItemID string `json:"line_item_id,omitempty"`
	LineItem
}

// QuoteUpdateLineItemsInput is quote.update_line_items's input: the quote's lines, all of them, in order.
type QuoteUpdateLineItemsInput struct {
	QuoteID   string      `json:"quote_id,omitempty"`
	LineItems []QuoteLine `json:"line_items"`
}

// QuoteCalculateTotalsInput is quote.calculate_totals's input.
type QuoteCalculateTotalsInput struct {
	QuoteID string `json:"quote_id,omitempty"`
}

// QuoteTotals are what a quote comes to, in cents, with the lines they sum.
type QuoteTotals struct {
	Currency       string `json:"currency"`
	SubtotalCents  int64  `json:"subtotal_cents"`
	GSTRatePercent int    `json:"gst_rate_percent"`
	GSTCents       *int64 `json:"gst_cents"`
	// TaxCents is where a result without gst_cents keeps the tax; the handler never writes it.
	TaxCents   *int64          `json:"tax_cents,omitempty"`
	TotalCents int64           `json:"total_cents"`
	LineCount  int             `json:"line_count"`
	LineItems  []QuoteLineItem `json:"line_items"`
}

// QuoteCalculateTotalsOutput is quote.calculate_totals's result: the quote's totals, and whether this call
// changed them.
type QuoteCalculateTotalsOutput struct {
	QuoteID string      `json:"quote_id"`
	Status  string      `json:"status"`
	Changed bool        `json:"changed"`
	Totals  QuoteTotals `json:"totals"`
}

// QuoteGeneratePDFInput is quote.generate_pdf's input.
type QuoteGeneratePDFInput struct {
	QuoteID  string `json:"quote_id,omitempty"`
	Template string `json:"template,omitempty"`
}

// QuoteSendToClientInput is quote.send_to_client's input.
type QuoteSendToClientInput struct {
	QuoteID         string `json:"quote_id,omitempty"`
	Channel         string `json:"channel"`
	Email           string `json:"email,omitempty"`
	Phone           string `json:"phone,omitempty"`
	MessageOverride string `json:"message_override,omitempty"`
}

// QuoteMarkSentInput is quote.mark_sent's input.
type QuoteMarkSentInput struct {
	QuoteID string `json:"quote_id,omitempty"`
	SentVia string `json:"sent_via,omitempty"`
}

// QuoteMarkAcceptedInput is quote.mark_accepted's input.
type QuoteMarkAcceptedInput struct {
	QuoteID    string     `json:"quote_id,omitempty"`
	AcceptedAt *time.Time `json:"accepted_at,omitempty"`
	Notes      string     `json:"notes,omitempty"`
}

// QuoteMarkDeclinedInput is quote.mark_declined's input.
type QuoteMarkDeclinedInput struct {
	QuoteID string `json:"quote_id,omitempty"`
	Reason  string `json:"reason"`
	Notes   string `json:"notes,omitempty"`
}

// QuoteGeneratePDFOutput is quote.generate_pdf's result: the PDF it wrote to the file store, and the total
// the PDF shows (GST included).
type QuoteGeneratePDFOutput struct {
	// FileRef is the PDF's reference in the file store (gemfs://<sha256>.pdf).
	FileRef  string `json:"file_ref"`
	QuoteID  string `json:"quote_id"`
	Template string `json:"template"`
	// Name is a file name for people (quote-Q-0001.pdf).
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	TotalCents  int64  `json:"total_cents"`
}

// QuoteDelivery is a message quote.send_to_client sent: its channel, where it went (an address or an E.164
// number), its row in the communications log and the provider's reference.
type QuoteDelivery struct {
	Channel     string `json:"channel"`
	To          string `json:"to"`
	CommID      string `json:"comm_id"`
	Provider    string `json:"provider"`
	ProviderRef string `json:"provider_ref"`
}

// MessageNotSent is a channel asked for whose message to the customer did not go out, and why.
type MessageNotSent struct {
	Channel string `json:"channel"`
	Reason  string `json:"reason"`
}

// QuoteSendToClientOutput is quote.send_to_client's result: the messages that went out, the channels that
// failed after another had gone out, and the quote's status and its lead's stage after sending.
type QuoteSendToClientOutput struct {
	Sent           bool             `json:"sent"`
	QuoteID        string           `json:"quote_id"`
	Status         string           `json:"status"`
	PreviousStatus string           `json:"previous_status"`
	LeadStage      string           `json:"lead_stage"`
	Deliveries     []QuoteDelivery  `json:"deliveries"`
	NotDelivered   []MessageNotSent `json:"not_delivered"`
}
