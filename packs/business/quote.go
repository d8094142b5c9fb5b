package businesspack

import "time"

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

// QuoteCreateFromInspectionOutput is quote.create_from_inspection's result (what the answer reads of it).
type QuoteCreateFromInspectionOutput struct {
	QuoteID string `json:"quote_id"`
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

// QuoteTotals are a quote's totals, in cents.
type QuoteTotals struct {
	SubtotalCents int64  `json:"subtotal_cents"`
	GSTCents      *int64 `json:"gst_cents"`
	// TaxCents is where a result without gst_cents keeps the tax.
	TaxCents   *int64 `json:"tax_cents,omitempty"`
	TotalCents int64  `json:"total_cents"`
}

// QuoteCalculateTotalsOutput is quote.calculate_totals's result.
type QuoteCalculateTotalsOutput struct {
	Totals QuoteTotals `json:"totals"`
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
