package business

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerQuote(h executor.Handlers, p *pack) {
	h.Func("quote.create_from_inspection", executor.Typed(p.createQuoteFromInspection))
	h.Func("quote.add_line_item", executor.Typed(addLineItem))
	h.Func("quote.update_line_item", executor.Typed(updateLineItem))
	h.Func("quote.calculate_totals", executor.Typed(calculateTotals))
	h.Func("quote.mark_sent", executor.Typed(transitionQuote("sent")))
	h.Func("quote.mark_accepted", executor.Typed(transitionQuote("accepted")))
	h.Func("quote.mark_declined", executor.Typed(transitionQuote("declined")))
}

type quote struct {
	QuoteID       uuid.UUID  `json:"quote_id"`
	Number        int64      `json:"number"`
	LeadID        uuid.UUID  `json:"lead_id"`
	InspectionID  uuid.UUID  `json:"inspection_id"`
	CustomerID    *uuid.UUID `json:"customer_id"`
	Status        string     `json:"status"`
	Currency      string     `json:"currency"`
	SubtotalCents int64      `json:"subtotal_cents"`
	GSTCents      int64      `json:"gst_cents"`
	TotalCents    int64      `json:"total_cents"`
	TotalsStale   bool       `json:"totals_stale"`
	ValidUntil    civilDate  `json:"valid_until"`
	Notes         *string    `json:"notes"`
	SentAt        *time.Time `json:"sent_at"`
	SentVia       *string    `json:"sent_via"`
	AcceptedAt    *time.Time `json:"accepted_at"`
	DeclinedAt    *time.Time `json:"declined_at"`
	DeclineReason *string    `json:"decline_reason"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

const quoteColumns = `id, number, lead_id, inspection_id, customer_id, status, currency, subtotal_cents, gst_cents, total_cents,
	totals_stale, valid_until, notes, sent_at, sent_via, accepted_at, declined_at, decline_reason, created_at, updated_at`

func scanQuote(row pgx.Row) (quote, error) {
	var q quote
	err := row.Scan(&q.QuoteID, &q.Number, &q.LeadID, &q.InspectionID, &q.CustomerID, &q.Status, &q.Currency,
		&q.SubtotalCents, &q.GSTCents, &q.TotalCents, &q.TotalsStale, &q.ValidUntil, &q.Notes, &q.SentAt, &q.SentVia,
		&q.AcceptedAt, &q.DeclinedAt, &q.DeclineReason, &q.CreatedAt, &q.UpdatedAt)
	return q, err
}

// lockQuote locks a quote for the rest of the call and returns it.
func lockQuote(ctx context.Context, c *executor.Call, id uuid.UUID) (quote, error) {
	q, err := scanQuote(c.DB.QueryRow(ctx, `SELECT `+quoteColumns+` FROM quotes WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return quote{}, notFoundIfNoRows(err, "quote", id)
	}
	return q, nil
}

// lockDraftQuote locks a quote whose lines may still change.
func lockDraftQuote(ctx context.Context, c *executor.Call, id uuid.UUID) (quote, error) {
	q, err := lockQuote(ctx, c, id)
	if err == nil && q.Status != "draft" {
		err = executor.Conflict("quote %s is %s: only a draft quote's lines can change", id, q.Status)
	}
	return q, err
}

type lineItem struct {
	LineItemID     uuid.UUID   `json:"line_item_id"`
	QuoteID        uuid.UUID   `json:"quote_id"`
	Position       int         `json:"position"`
	Description    string      `json:"description"`
	Quantity       json.Number `json:"quantity"`
	Unit           string      `json:"unit"`
	UnitPriceCents int64       `json:"unit_price_cents"`
	LineTotalCents int64       `json:"line_total_cents"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// trim_scale drops the trailing zeros numeric(12,3) adds, so 2 reads back as 2, not 2.000.
const lineItemColumns = `id, quote_id, position, description, trim_scale(quantity)::text, unit, unit_price_cents, line_total_cents, updated_at`

func scanLineItem(row pgx.Row) (lineItem, error) {
	var l lineItem
	var qty string
	err := row.Scan(&l.LineItemID, &l.QuoteID, &l.Position, &l.Description, &qty, &l.Unit, &l.UnitPriceCents, &l.LineTotalCents, &l.UpdatedAt)
	l.Quantity = json.Number(qty)
	return l, err
}

type createQuoteOutput struct {
	Quote               quote `json:"quote"`
	InspectionLockedNow bool  `json:"inspection_locked_now"`
}

type createQuoteFromInspectionInput struct {
	InspectionID uuid.UUID  `json:"inspection_id"`
	ValidDays    int        `json:"valid_days"`
	CustomerID   *uuid.UUID `json:"customer_id"`
	Notes        *string    `json:"notes"`
}

// createQuoteFromInspection starts a draft quote from a submitted or locked inspection. The quote is priced
// from what the inspection recorded, so a submitted inspection is locked by this call.
func (p *pack) createQuoteFromInspection(ctx context.Context, c *executor.Call, in createQuoteFromInspectionInput) (*createQuoteOutput, error) {
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	insp, err := lockInspectionRow(ctx, c, in.InspectionID)
	if err != nil {
		return nil, err
	}
	lockedNow := false
	switch insp.Status {
	case "draft":
		return nil, executor.Conflict("inspection %s is a draft: submit it before quoting from it", in.InspectionID)
	case "submitted":
		if _, err := c.DB.Exec(ctx, `UPDATE inspections SET status = 'locked', locked_at = now(), updated_at = now() WHERE id = $1`,
			in.InspectionID); err != nil {
			return nil, err
		}
		lockedNow = true
	}
	if in.CustomerID != nil {
		if err := requireEntity(ctx, c, *in.CustomerID, "customer"); err != nil {
			return nil, err
		}
	}
	q, err := scanQuote(c.DB.QueryRow(ctx, `INSERT INTO quotes (lead_id, inspection_id, customer_id, valid_until, notes)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+quoteColumns,
		insp.LeadID, in.InspectionID, in.CustomerID, today.addDays(limitOr(in.ValidDays, 30)), in.Notes))
	if err != nil {
		return nil, err
	}
	return &createQuoteOutput{Quote: q, InspectionLockedNow: lockedNow}, nil
}

type addLineItemOutput struct {
	LineItem    lineItem `json:"line_item"`
	TotalsStale bool     `json:"totals_stale"`
}

type addLineItemInput struct {
	QuoteID        uuid.UUID   `json:"quote_id"`
	Description    string      `json:"description"`
	Quantity       json.Number `json:"quantity"`
	Unit           string      `json:"unit"`
	UnitPriceCents int64       `json:"unit_price_cents"`
}

// addLineItem appends a line to a draft quote. The quote's totals are then stale until
// quote.calculate_totals.
func addLineItem(ctx context.Context, c *executor.Call, in addLineItemInput) (*addLineItemOutput, error) {
	if in.Unit == "" {
		in.Unit = "each"
	}
	total, err := lineTotalCents(in.Quantity, in.UnitPriceCents)
	if err != nil {
		return nil, err
	}
	if _, err := lockDraftQuote(ctx, c, in.QuoteID); err != nil {
		return nil, err
	}
	l, err := scanLineItem(c.DB.QueryRow(ctx, `INSERT INTO quote_line_items (quote_id, position, description, quantity, unit, unit_price_cents, line_total_cents)
		SELECT $1, coalesce(max(position), 0) + 1, $2, $3::numeric, $4, $5, $6 FROM quote_line_items WHERE quote_id = $1
		RETURNING `+lineItemColumns, in.QuoteID, in.Description, in.Quantity.String(), in.Unit, in.UnitPriceCents, total))
	if err != nil {
		return nil, err
	}
	if err := markTotalsStale(ctx, c, in.QuoteID); err != nil {
		return nil, err
	}
	return &addLineItemOutput{LineItem: l, TotalsStale: true}, nil
}

func markTotalsStale(ctx context.Context, c *executor.Call, quoteID uuid.UUID) error {
	_, err := c.DB.Exec(ctx, `UPDATE quotes SET totals_stale = true, updated_at = now() WHERE id = $1 AND NOT totals_stale`, quoteID)
	return err
}

type updateLineItemOutput struct {
	LineItem      lineItem `json:"line_item"`
	UpdatedFields []string `json:"updated_fields"`
}

type updateLineItemInput struct {
	LineItemID     uuid.UUID    `json:"line_item_id"`
	Description    *string      `json:"description"`
	Quantity       *json.Number `json:"quantity"`
	Unit           *string      `json:"unit"`
	UnitPriceCents *int64       `json:"unit_price_cents"`
}

// updateLineItem changes a line of a draft quote. Only fields whose value changes are written; the quote's
// totals are then stale until quote.calculate_totals.
func updateLineItem(ctx context.Context, c *executor.Call, in updateLineItemInput) (*updateLineItemOutput, error) {
	var quoteID uuid.UUID
	if err := c.DB.QueryRow(ctx, `SELECT quote_id FROM quote_line_items WHERE id = $1`, in.LineItemID).Scan(&quoteID); err != nil {
		return nil, notFoundIfNoRows(err, "line item", in.LineItemID)
	}
	// The quote first, then the line: every writer of a quote's lines takes the locks in this order.
	if _, err := lockDraftQuote(ctx, c, quoteID); err != nil {
		return nil, err
	}
	cur, err := scanLineItem(c.DB.QueryRow(ctx, `SELECT `+lineItemColumns+` FROM quote_line_items WHERE id = $1 FOR UPDATE`, in.LineItemID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "line item", in.LineItemID)
	}
	next := cur
	updated := []string{}
	if in.Description != nil && *in.Description != cur.Description {
		next.Description = *in.Description
		updated = append(updated, "description")
	}
	if in.Quantity != nil {
		a, err := thousandths(*in.Quantity)
		if err != nil {
			return nil, err
		}
		if b, _ := thousandths(cur.Quantity); a != b {
			next.Quantity = *in.Quantity
			updated = append(updated, "quantity")
		}
	}
	if in.Unit != nil && *in.Unit != cur.Unit {
		next.Unit = *in.Unit
		updated = append(updated, "unit")
	}
	if in.UnitPriceCents != nil && *in.UnitPriceCents != cur.UnitPriceCents {
		next.UnitPriceCents = *in.UnitPriceCents
		updated = append(updated, "unit_price_cents")
	}
	if len(updated) == 0 {
		return &updateLineItemOutput{LineItem: cur, UpdatedFields: updated}, nil
	}
	if next.LineTotalCents, err = lineTotalCents(next.Quantity, next.UnitPriceCents); err != nil {
		return nil, err
	}
	l, err := scanLineItem(c.DB.QueryRow(ctx, `UPDATE quote_line_items SET description = $2, quantity = $3::numeric, unit = $4,
			unit_price_cents = $5, line_total_cents = $6, updated_at = now()
		WHERE id = $1 RETURNING `+lineItemColumns,
		in.LineItemID, next.Description, next.Quantity.String(), next.Unit, next.UnitPriceCents, next.LineTotalCents))
	if err != nil {
		return nil, err
	}
	if err := markTotalsStale(ctx, c, quoteID); err != nil {
		return nil, err
	}
	return &updateLineItemOutput{LineItem: l, UpdatedFields: updated}, nil
}

type calculateTotalsOutput struct {
	QuoteID        uuid.UUID  `json:"quote_id"`
	Status         string     `json:"status"`
	Currency       string     `json:"currency"`
	LineItems      []lineItem `json:"line_items"`
	SubtotalCents  int64      `json:"subtotal_cents"`
	GSTRatePercent int        `json:"gst_rate_percent"`
	GSTCents       int64      `json:"gst_cents"`
	TotalCents     int64      `json:"total_cents"`
	Changed        bool       `json:"changed"`
}

type calculateTotalsInput struct {
	QuoteID uuid.UUID `json:"quote_id"`
}

// calculateTotals sums a draft quote's lines into its subtotal, GST and total (see money.go). A quote that
// has left draft keeps the totals it was sent with, which are returned as they are.
func calculateTotals(ctx context.Context, c *executor.Call, in calculateTotalsInput) (*calculateTotalsOutput, error) {
	q, err := lockQuote(ctx, c, in.QuoteID)
	if err != nil {
		return nil, err
	}
	lines, err := queryList(ctx, c, scanLineItem, `SELECT `+lineItemColumns+` FROM quote_line_items WHERE quote_id = $1 ORDER BY position`, in.QuoteID)
	if err != nil {
		return nil, err
	}
	changed := false
	if q.Status == "draft" {
		var subtotal int64
		for _, l := range lines {
			subtotal += l.LineTotalCents
		}
		gst := gstCents(subtotal)
		if q.TotalsStale || q.SubtotalCents != subtotal || q.GSTCents != gst {
			q, err = scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET subtotal_cents = $2, gst_cents = $3, total_cents = $4,
					totals_stale = false, updated_at = now()
				WHERE id = $1 RETURNING `+quoteColumns, in.QuoteID, subtotal, gst, subtotal+gst))
			if err != nil {
				return nil, err
			}
			changed = true
		}
	}
	return &calculateTotalsOutput{
		QuoteID: q.QuoteID, Status: q.Status, Currency: q.Currency, LineItems: lines,
		SubtotalCents: q.SubtotalCents, GSTRatePercent: GSTRatePercent, GSTCents: q.GSTCents,
		TotalCents: q.TotalCents, Changed: changed,
	}, nil
}

// quoteTransitions is the quote state machine: the status a quote must have to move to each status, and
// what the move sets ($3, when used, is the input's sent_via or reason).
var quoteTransitions = map[string]struct{ from, set string }{
	"sent":     {"draft", "sent_at = now(), sent_via = $3"},
	"accepted": {"sent", "accepted_at = now()"},
	"declined": {"sent", "declined_at = now(), decline_reason = $3"},
}

type transitionQuoteInput struct {
	QuoteID uuid.UUID `json:"quote_id"`
	SentVia string    `json:"sent_via"`
	Reason  *string   `json:"reason"`
}

type transitionQuoteOutput struct {
	Quote          quote  `json:"quote"`
	PreviousStatus string `json:"previous_status"`
	Changed        bool   `json:"changed"`
	LeadStage      string `json:"lead_stage"`
}

// transitionQuote moves a quote along draft → sent → accepted | declined. Moving it to the status it has
// changes nothing; any other move is a conflict. Sending needs at least one line and fresh totals; sending
// moves the lead to quoted and accepting wins it.
func transitionQuote(to string) func(ctx context.Context, c *executor.Call, in transitionQuoteInput) (*transitionQuoteOutput, error) {
	return func(ctx context.Context, c *executor.Call, in transitionQuoteInput) (*transitionQuoteOutput, error) {
		return transitionQuoteTo(ctx, c, in, to)
	}
}

func transitionQuoteTo(ctx context.Context, c *executor.Call, in transitionQuoteInput, to string) (*transitionQuoteOutput, error) {
	t := quoteTransitions[to]
	q, err := lockQuote(ctx, c, in.QuoteID)
	if err != nil {
		return nil, err
	}
	previous := q.Status
	changed := q.Status != to
	if changed {
		if q.Status != t.from {
			return nil, executor.Conflict("quote %s is %s: only a %s quote can be marked %s", in.QuoteID, q.Status, t.from, to)
		}
		var arg any = in.Reason
		if to == "sent" {
			if in.SentVia == "" {
				in.SentVia = "email"
			}
			arg = in.SentVia
			var lines int
			if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM quote_line_items WHERE quote_id = $1`, in.QuoteID).Scan(&lines); err != nil {
				return nil, err
			}
			switch {
			case lines == 0:
				return nil, executor.Conflict("quote %s has no line items: add them before sending it", in.QuoteID)
			case q.TotalsStale:
				return nil, executor.Conflict("quote %s's totals are stale: run quote.calculate_totals before sending it", in.QuoteID)
			}
		}
		args := []any{in.QuoteID, to}
		if strings.Contains(t.set, "$3") {
			args = append(args, arg)
		}
		// t.set comes from quoteTransitions, never from the input.
		q, err = scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET status = $2, `+t.set+`, updated_at = now()
			WHERE id = $1 RETURNING `+quoteColumns, args...))
		if err != nil {
			return nil, err
		}
	}
	stage := map[string]string{"sent": "quoted", "accepted": "won"}[to]
	var leadStage string
	if stage == "" {
		err = c.DB.QueryRow(ctx, `SELECT stage FROM leads WHERE id = $1`, q.LeadID).Scan(&leadStage)
	} else {
		_, leadStage, err = advanceLead(ctx, c.DB, q.LeadID, stage)
	}
	if err != nil {
		return nil, notFoundIfNoRows(err, "lead", q.LeadID)
	}
	return &transitionQuoteOutput{Quote: q, PreviousStatus: previous, Changed: changed, LeadStage: leadStage}, nil
}
