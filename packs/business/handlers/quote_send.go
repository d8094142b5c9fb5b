package businesshandlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
)

// sendQuoteToClient sends a quote to its customer by email, SMS or both, through the providers of comms,
// and marks a draft quote sent (its totals brought up to date first; it needs a line). The email carries
// the lines and totals, the SMS a one-line summary; message_override replaces the SMS text and the email's
// opening. Recipients are the ones given, else the customer's, else the lead's. Everything is checked
// before anything is sent: a provider not configured is not_configured, a missing or bad recipient a
// validation_error. If the email went out and the SMS then failed, the call still succeeds, saying so in
// not_delivered. A resend of a sent quote sends again; an accepted or declined quote is a conflict.
func (p *pack) sendQuoteToClient(ctx context.Context, c *executor.Call, in businesspack.QuoteSendToClientInput) (*businesspack.QuoteSendToClientOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	wantEmail, wantSMS := in.Channel != "sms", in.Channel != "email"
	if wantEmail {
		if err := p.emailReady(); err != nil {
			return nil, err
		}
	}
	if wantSMS {
		if err := p.smsReady(); err != nil {
			return nil, err
		}
	}
	q, err := lockQuote(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	previous := q.Status
	if q.Status == "accepted" || q.Status == "declined" {
		return nil, executor.Conflict("quote %s is %s: it is no longer sent to the customer", quoteID, q.Status)
	}
	d, err := loadQuoteDocument(ctx, c, q)
	if err != nil {
		return nil, err
	}
	if len(d.Lines) == 0 {
		return nil, executor.Conflict("quote %s has no line items: add them before sending it", quoteID)
	}
	email, phone := firstOf(trimmedText(&in.Email), d.Email), firstOf(trimmedText(&in.Phone), d.Phone)
	if wantEmail {
		if email == nil {
			return nil, inputError("email", "quote %s's customer has no email address: pass email", quoteLabel(q.Number))
		}
		if _, err := emailRecipient(*email); err != nil {
			return nil, inputError("email", "%s", errorMessage(err))
		}
	}
	if wantSMS {
		if phone == nil {
			return nil, inputError("phone", "quote %s's customer has no phone number: pass phone", quoteLabel(q.Number))
		}
		if _, err := p.smsRecipient(*phone); err != nil {
			return nil, inputError("phone", "%s", errorMessage(err))
		}
	}
	if q.Status == "draft" {
		// The totals the customer reads become the quote's: write them before sending.
		if q, _, err = refreshTotals(ctx, c, q, d.Lines); err != nil {
			return nil, err
		}
		d.SubtotalCents, d.GSTCents, d.TotalCents = q.SubtotalCents, q.GSTCents, q.TotalCents
	}

	about := contextRef{Type: "quote", ID: q.QuoteID}
	var messages []outgoing
	if wantEmail {
		subject, body := p.quoteEmail(d, &in.MessageOverride)
		messages = append(messages, outgoing{email: &emailDelivery{To: *email, Subject: subject, Body: body, Ref: about}})
	}
	if wantSMS {
		messages = append(messages, outgoing{sms: &smsDelivery{To: *phone, Body: p.quoteSMS(d, &in.MessageOverride), Ref: about}})
	}
	sent, failed, err := p.deliverInTurn(ctx, c, messages)
	if err != nil {
		return nil, err
	}
	out := &businesspack.QuoteSendToClientOutput{QuoteID: q.QuoteID, PreviousStatus: previous, Deliveries: []businesspack.QuoteDelivery{}, NotDelivered: failed}
	for _, s := range sent {
		out.Deliveries = append(out.Deliveries, businesspack.QuoteDelivery{Channel: s.Channel, To: s.To, CommID: s.ID.String(), Provider: s.Provider, ProviderRef: s.ProviderRef})
	}

	via := out.Deliveries[0].Channel
	if len(out.Deliveries) == 2 {
		via = "both"
	}
	if q.Status == "draft" {
		if q, err = scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET status = 'sent', sent_at = now(), sent_via = $2, updated_at = now()
			WHERE id = $1 RETURNING `+quoteColumns, q.QuoteID, via)); err != nil {
			return nil, fmt.Errorf("error marking quote %s sent, which went to the customer: %w", q.QuoteID, err)
		}
	}
	out.Sent, out.Status = true, q.Status
	if out.LeadStage, err = leadStageFor(ctx, c, q); err != nil {
		return nil, err
	}
	return out, nil
}

func firstOf(texts ...*string) *string {
	for _, t := range texts {
		if t != nil && strings.TrimSpace(*t) != "" {
			return t
		}
	}
	return nil
}

// quoteSMS is the text of a quote by SMS: the override, or who, what, how much and until when.
func (p *pack) quoteSMS(d quoteDocument, override *string) string {
	if o := trimmedText(override); o != nil {
		return *o
	}
	biz := p.cfg.Business.WithDefaults()
	s := fmt.Sprintf("Hi %s, your quote %s from %s", greetingName(d.Customer), quoteLabel(d.Quote.Number), biz.Name)
	if d.Site != "" {
		s += " for " + d.Site
	}
	s += fmt.Sprintf(" is %s incl. GST, valid until %s.", formatAUD(d.TotalCents), d.Quote.ValidUntil.Time().Format("2 Jan 2006"))
	if biz.Phone != "" {
		return s + " Reply or call " + biz.Phone + " to accept."
	}
	return s + " Reply to accept."
}

// quoteEmail is the subject and plain-text body of a quote by email: an opening (or the override), the
// lines and totals, the terms and the business's details.
func (p *pack) quoteEmail(d quoteDocument, override *string) (subject, body string) {
	biz := p.cfg.Business.WithDefaults()
	label := quoteLabel(d.Quote.Number)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	if o := trimmedText(override); o != nil {
		line("%s", *o)
	} else {
		line("Hi %s,", greetingName(d.Customer))
		line("")
		if d.Site != "" {
			line("Thank you for having us inspect the roof at %s. Here is our quote %s.", d.Site, label)
		} else {
			line("Here is our quote %s.", label)
		}
	}
	line("")
	for _, l := range d.Lines {
		line("- %s: %s x %s = %s", l.Description, quantityText(l), formatAUD(l.UnitPriceCents), formatAUD(l.LineTotalCents))
	}
	line("")
	line("Subtotal (excl. GST): %s", formatAUD(d.SubtotalCents))
	line("GST (%d%%): %s", GSTRatePercent, formatAUD(d.GSTCents))
	line("Total (incl. GST): %s", formatAUD(d.TotalCents))
	line("")
	accept := "reply to this email"
	if biz.Phone != "" {
		accept += " or call us on " + biz.Phone
	}
	line("This quote is valid until %s. To accept it, %s.", d.Quote.ValidUntil.Time().Format("2 Jan 2006"), accept)
	line("")
	line("%s", biz.Name)
	for _, detail := range []string{prefixed("ABN ", biz.ABN), biz.Phone, biz.Email, biz.Address} {
		if detail != "" {
			line("%s", detail)
		}
	}
	return fmt.Sprintf("Your quote %s from %s: %s incl. GST", label, biz.Name, formatAUD(d.TotalCents)), strings.TrimRight(b.String(), "\n")
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
