package businesshandlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerQuote(h executor.Handlers, p *pack) {
	h.Func(businesspack.CreateQuoteFromInspection, executor.Typed(p.createQuoteFromInspection))
	h.Func(businesspack.UpdateLineItems, executor.Typed(updateLineItems))
	h.Func(businesspack.AddLineItem, executor.Typed(addLineItem))
	h.Func(businesspack.UpdateLineItem, executor.Typed(updateLineItem))
	h.Func(businesspack.CalculateQuoteTotals, executor.Typed(calculateTotals))
	h.Func(businesspack.GenerateQuotePDF, executor.Typed(p.generateQuotePDF))
	h.Add(businesspack.SendQuoteToClient, executor.Handler{Run: executor.Typed(p.sendQuoteToClient), Isolated: true,
		RequiredEnv: slices.Concat(businesspack.EmailRequiredEnv, businesspack.SMSRequiredEnv)})
	h.Func(businesspack.MarkQuoteSent, executor.Typed(markQuoteSent))
	h.Func(businesspack.MarkQuoteAccepted, executor.Typed(markQuoteAccepted))
	h.Func(businesspack.MarkQuoteDeclined, executor.Typed(markQuoteDeclined))
}

const quoteColumns = `id, number, lead_id, inspection_id, customer_id, status, currency, pricing_profile, subtotal_cents, gst_cents,
	total_cents, totals_stale, valid_until, notes, sent_at, sent_via, accepted_at, declined_at, decline_reason, decision_notes,
	created_at, updated_at`

func scanQuote(row pgx.Row) (businesspack.Quote, error) {
	var q businesspack.Quote
	err := row.Scan(&q.QuoteID, &q.Number, &q.LeadID, &q.InspectionID, &q.CustomerID, &q.Status, &q.Currency, &q.PricingProfile,
		&q.SubtotalCents, &q.GSTCents, &q.TotalCents, &q.TotalsStale, &q.ValidUntil, &q.Notes, &q.SentAt, &q.SentVia,
		&q.AcceptedAt, &q.DeclinedAt, &q.DeclineReason, &q.DecisionNotes, &q.CreatedAt, &q.UpdatedAt)
	return q, err
}

// quoteLabel is how paperwork and messages name a quote.
func quoteLabel(number int64) string { return fmt.Sprintf("Q-%04d", number) }

// lockQuote locks a quote for the rest of the call and returns it.
func lockQuote(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Quote, error) {
	q, err := scanQuote(c.DB.QueryRow(ctx, `SELECT `+quoteColumns+` FROM quotes WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return businesspack.Quote{}, executor.NotFoundIfNoRows(err, "quote", id)
	}
	return q, nil
}

// lockDraftQuote locks a quote whose lines may still change.
func lockDraftQuote(ctx context.Context, c *executor.Call, id uuid.UUID) (businesspack.Quote, error) {
	q, err := lockQuote(ctx, c, id)
	if err == nil && q.Status != "draft" {
		err = executor.Conflict("quote %s is %s: only a draft quote's lines can change", id, q.Status)
	}
	return q, err
}

// trim_scale drops the trailing zeros numeric(12,3) adds, so 2 reads back as 2, not 2.000.
const lineItemColumns = `id, quote_id, position, description, trim_scale(quantity)::text, unit, unit_price_cents, line_total_cents, updated_at`

func scanLineItem(row pgx.Row) (businesspack.QuoteLineItem, error) {
	var l businesspack.QuoteLineItem
	var qty string
	err := row.Scan(&l.LineItemID, &l.QuoteID, &l.Position, &l.Description, &qty, &l.Unit, &l.UnitPriceCents, &l.LineTotalCents, &l.UpdatedAt)
	l.Quantity = json.Number(qty)
	return l, err
}

// quoteLines reads a quote's lines in order; quoteID is a uuid.UUID or its text.
func quoteLines(ctx context.Context, c *executor.Call, quoteID any) ([]businesspack.QuoteLineItem, error) {
	return executor.QueryList(ctx, c.DB, scanLineItem, `SELECT `+lineItemColumns+` FROM quote_line_items WHERE quote_id = $1 ORDER BY position`, quoteID)
}

// A line item as callers give it (quote.update_line_items' items, quote.add_line_item): description and
// unit_price_cents required, quantity defaulting to 1 and unit to "each".
const (
	maxLineDescription = 500
	maxLineUnit        = 20
	defaultLineUnit    = "each"
)

// lineItemFields are the fields of a line item object; line_item_id keeps an existing line.
var lineItemFields = []string{"line_item_id", "description", "quantity", "unit", "unit_price_cents"}

// lineSpec is a line item as given, with its total once checked.
type lineSpec struct {
	LineItemID     *string
	Description    string
	Quantity       json.Number
	Unit           string
	UnitPriceCents int64
	LineTotalCents int64
}

func newLineSpec(description, quantity, unit string, unitPriceCents int64) lineSpec {
	return lineSpec{Description: description, Quantity: json.Number(trimZeros(quantity)), Unit: unit, UnitPriceCents: unitPriceCents}
}

// inputError is a validation_error about one field of the input, named in the message and the details.
func inputError(field, format string, args ...any) error {
	return &executor.Error{Code: registry.CodeValidation, Message: field + ": " + fmt.Sprintf(format, args...),
		Details: map[string]any{"field": field}}
}

// check validates the line (at, like "line_items[2]", names it in errors) and works out its total.
func (l *lineSpec) check(at string) error {
	field := func(name string) string {
		if at == "" {
			return name
		}
		return at + "." + name
	}
	l.Description = strings.TrimSpace(l.Description)
	if l.Description == "" {
		return inputError(field("description"), "is empty: say what the line is for")
	}
	if n := utf8.RuneCountInString(l.Description); n > maxLineDescription {
		return inputError(field("description"), "is %d characters, more than %d", n, maxLineDescription)
	}
	l.Unit = strings.TrimSpace(l.Unit)
	if l.Unit == "" {
		l.Unit = defaultLineUnit
	}
	if n := utf8.RuneCountInString(l.Unit); n > maxLineUnit {
		return inputError(field("unit"), "%q is more than %d characters", l.Unit, maxLineUnit)
	}
	if l.Quantity == "" {
		l.Quantity = "1"
	}
	if _, err := thousandths(l.Quantity); err != nil {
		return inputError(field("quantity"), "%s", errorMessage(err))
	}
	if l.UnitPriceCents < 0 || l.UnitPriceCents > maxUnitPriceCents {
		return inputError(field("unit_price_cents"), "%d is outside 0..%d", l.UnitPriceCents, int64(maxUnitPriceCents))
	}
	total, err := lineTotalCents(l.Quantity, l.UnitPriceCents)
	if err != nil {
		return inputError(field("quantity"), "%s", errorMessage(err))
	}
	l.LineTotalCents = total
	return nil
}

// errorMessage is an error's message without the executor's code prefix.
func errorMessage(err error) string {
	var e *executor.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// parseLineItem reads items[index] of quote.update_line_items: an object of lineItemFields.
func parseLineItem(raw json.RawMessage, index int) (lineSpec, error) {
	at := fmt.Sprintf("line_items[%d]", index)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return lineSpec{}, inputError(at, "is not an object")
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(lineItemFields, name) {
			return lineSpec{}, inputError(at+"."+name, "is not a line item field: a line item has %s", strings.Join(lineItemFields, ", "))
		}
	}
	var l lineSpec
	read := func(name string, into any, want string, required bool) error {
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			if required {
				return inputError(at+"."+name, "is missing: every line item needs description and unit_price_cents")
			}
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		// json.Number also reads a number in quotes; a line's numbers must be JSON numbers.
		_, wantsNumber := into.(**json.Number)
		if err := dec.Decode(into); err != nil || (wantsNumber && v[0] == '"') {
			return inputError(at+"."+name, "must be %s, not %s", want, v)
		}
		return nil
	}
	var price *json.Number
	var idText *string
	if err := read("line_item_id", &idText, "a line item id (UUID)", false); err != nil {
		return l, err
	}
	if idText != nil {
		parsed, err := executor.RecordID(at+".line_item_id", *idText)
		if err != nil {
			return l, err
		}
		id := parsed.String()
		l.LineItemID = &id
	}
	if err := read("description", &l.Description, "a string", true); err != nil {
		return l, err
	}
	var quantity *json.Number
	if err := read("quantity", &quantity, "a number", false); err != nil {
		return l, err
	}
	if quantity != nil {
		l.Quantity = *quantity
	}
	if err := read("unit", &l.Unit, "a string", false); err != nil {
		return l, err
	}
	if err := read("unit_price_cents", &price, "a whole number of cents", true); err != nil {
		return l, err
	}
	cents, err := price.Int64()
	if err != nil {
		return l, inputError(at+".unit_price_cents", "must be a whole number of cents, not %s", *price)
	}
	l.UnitPriceCents = cents
	return l, l.check(at)
}

// insertLines writes lines to a quote at positions 1, 2, ...; a line with an id keeps it.
func insertLines(ctx context.Context, c *executor.Call, quoteID any, lines []lineSpec) ([]businesspack.QuoteLineItem, error) {
	out := make([]businesspack.QuoteLineItem, 0, len(lines))
	for i, l := range lines {
		item, err := scanLineItem(c.DB.QueryRow(ctx, `INSERT INTO quote_line_items
				(id, quote_id, position, description, quantity, unit, unit_price_cents, line_total_cents)
			VALUES (coalesce($1, gen_random_uuid()), $2, $3, $4, $5::numeric, $6, $7, $8) RETURNING `+lineItemColumns,
			l.LineItemID, quoteID, i+1, l.Description, l.Quantity.String(), l.Unit, l.UnitPriceCents, l.LineTotalCents))
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

// totalsOf sums lines into a subtotal, GST and total (see money.go).
func totalsOf[L businesspack.QuoteLineItem | lineSpec](lines []L) (subtotal, gst, total int64) {
	for _, l := range lines {
		switch l := any(l).(type) {
		case businesspack.QuoteLineItem:
			subtotal += l.LineTotalCents
		case lineSpec:
			subtotal += l.LineTotalCents
		}
	}
	gst = gstCents(subtotal)
	return subtotal, gst, subtotal + gst
}

// createQuoteFromInspectionInput is quote.create_from_inspection's input as the handler reads it: a
// customer_id that is not a UUID is refused even when empty.
type createQuoteFromInspectionInput struct {
	businesspack.QuoteCreateFromInspectionInput
	CustomerID *uuid.UUID `json:"customer_id"`
}

// createQuoteFromInspection starts a draft quote from a locked or submitted inspection (a submitted one is
// locked: the evidence behind a quote is frozen), priced with a pricing profile from the inspection's
// defects and measurements, with its totals calculated. The customer is the one given, else the lead's
// customer entity, if any.
func (p *pack) createQuoteFromInspection(ctx context.Context, c *executor.Call, in createQuoteFromInspectionInput) (*businesspack.QuoteCreateFromInspectionOutput, error) {
	inspectionID, err := executor.RecordID("inspection_id", in.InspectionID)
	if err != nil {
		return nil, err
	}
	profile, err := lookupPricingProfile(in.PricingProfile)
	if err != nil {
		return nil, err
	}
	if in.ValidDays < 0 || in.ValidDays > 365 {
		return nil, inputError("valid_days", "%d is outside 1..365", in.ValidDays)
	}
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	insp, err := lockInspectionRow(ctx, c, inspectionID)
	if err != nil {
		return nil, err
	}
	lockedNow := false
	switch insp.Status {
	case "draft":
		return nil, executor.Conflict("inspection %s is a draft: lock it with inspection.lock (or submit it) before quoting from it", inspectionID)
	case "submitted":
		if _, err := c.DB.Exec(ctx, `UPDATE inspections SET status = 'locked', locked_at = now(), updated_at = now() WHERE id = $1`,
			inspectionID); err != nil {
			return nil, err
		}
		lockedNow = true
	}
	customer := in.CustomerID
	if customer != nil {
		var kind string
		if err := c.DB.QueryRow(ctx, `SELECT kind FROM entities WHERE id = $1 FOR KEY SHARE`, *customer).Scan(&kind); err != nil {
			return nil, executor.NotFoundIfNoRows(err, "customer", *customer)
		}
		if kind != "client" && kind != "customer" {
			return nil, executor.Invalid("entity %s is a %s, not a client", *customer, kind)
		}
	} else {
		var id uuid.UUID
		err := c.DB.QueryRow(ctx, `SELECT id FROM entities WHERE lead_id = $1 AND kind IN ('client', 'customer') ORDER BY created_at, id LIMIT 1
			FOR KEY SHARE`, insp.LeadID).Scan(&id)
		switch {
		case err == nil:
			customer = &id
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, err
		}
	}
	data, err := loadInspection(ctx, c, inspectionID)
	if err != nil {
		return nil, err
	}
	lines := profile.priceInspection(data)
	for i := range lines {
		if err := lines[i].check(fmt.Sprintf("the %s profile's line %d", profile.name, i+1)); err != nil {
			return nil, err
		}
	}
	subtotal, gst, total := totalsOf(lines)
	q, err := scanQuote(c.DB.QueryRow(ctx, `INSERT INTO quotes (lead_id, inspection_id, customer_id, pricing_profile, valid_until, notes,
			subtotal_cents, gst_cents, total_cents)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+quoteColumns,
		insp.LeadID, inspectionID, customer, profile.name, today.AddDays(executor.LimitOr(in.ValidDays, 30)), trimmedText(&in.Notes),
		subtotal, gst, total))
	if err != nil {
		return nil, err
	}
	items, err := insertLines(ctx, c, q.QuoteID, lines)
	if err != nil {
		return nil, err
	}
	return &businesspack.QuoteCreateFromInspectionOutput{QuoteID: q.QuoteID, Quote: q, LineItems: items, InspectionLockedNow: lockedNow}, nil
}

// updateLineItemsInput is quote.update_line_items' input as the handler reads it: each line key by key (its
// quantity exact, its fields named in errors).
type updateLineItemsInput struct {
	businesspack.QuoteUpdateLineItemsInput
	LineItems []json.RawMessage `json:"line_items"`
}

// updateLineItems replaces a draft quote's lines with the list given, in its order. An item with a
// line_item_id keeps that line's id; an item equal to the line at its position is that line. The same list
// again changes nothing; otherwise the totals are stale until quote.calculate_totals.
func updateLineItems(ctx context.Context, c *executor.Call, in updateLineItemsInput) (*businesspack.QuoteUpdateLineItemsOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	specs := make([]lineSpec, len(in.LineItems))
	for i, raw := range in.LineItems {
		var err error
		if specs[i], err = parseLineItem(raw, i); err != nil {
			return nil, err
		}
	}
	q, err := lockDraftQuote(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	current, err := quoteLines(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	claimed := map[string]bool{}
	for i, s := range specs {
		if s.LineItemID == nil {
			continue
		}
		if claimed[*s.LineItemID] {
			return nil, inputError(fmt.Sprintf("line_items[%d].line_item_id", i), "%s is given twice", *s.LineItemID)
		}
		if !slices.ContainsFunc(current, func(l businesspack.QuoteLineItem) bool { return l.LineItemID == *s.LineItemID }) {
			return nil, executor.NotFound("line item %s is not a line of quote %s", *s.LineItemID, quoteID)
		}
		claimed[*s.LineItemID] = true
	}
	for i := range specs {
		if specs[i].LineItemID == nil && i < len(current) && !claimed[current[i].LineItemID] && sameLine(current[i], specs[i]) {
			specs[i].LineItemID = &current[i].LineItemID
			claimed[current[i].LineItemID] = true
		}
	}
	unchanged := len(specs) == len(current)
	for i := 0; unchanged && i < len(specs); i++ {
		unchanged = specs[i].LineItemID != nil && *specs[i].LineItemID == current[i].LineItemID && sameLine(current[i], specs[i])
	}
	if unchanged {
		return &businesspack.QuoteUpdateLineItemsOutput{QuoteID: quoteID.String(), LineItems: current, TotalsStale: q.TotalsStale}, nil
	}
	if _, err := c.DB.Exec(ctx, `DELETE FROM quote_line_items WHERE quote_id = $1`, quoteID); err != nil {
		return nil, err
	}
	items, err := insertLines(ctx, c, quoteID, specs)
	if err != nil {
		return nil, err
	}
	if err := markTotalsStale(ctx, c, quoteID); err != nil {
		return nil, err
	}
	return &businesspack.QuoteUpdateLineItemsOutput{QuoteID: quoteID.String(), LineItems: items, Changed: true, TotalsStale: true}, nil
}

// sameLine reports whether a line already says what a spec says.
func sameLine(l businesspack.QuoteLineItem, s lineSpec) bool {
	a, _ := thousandths(l.Quantity)
	b, _ := thousandths(s.Quantity)
	return l.Description == s.Description && a == b && l.Unit == s.Unit && l.UnitPriceCents == s.UnitPriceCents
}

// addLineItemInput is quote.add_line_item's input as the handler reads it: its quantity exact, as given.
type addLineItemInput struct {
	businesspack.QuoteAddLineItemInput
	Quantity json.Number `json:"quantity"`
}

// addLineItem appends a line (the same fields as an item of quote.update_line_items) to a draft quote. The
// quote's totals are then stale until quote.calculate_totals.
func addLineItem(ctx context.Context, c *executor.Call, in addLineItemInput) (*businesspack.QuoteAddLineItemOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	spec := lineSpec{Description: in.Description, Quantity: in.Quantity, Unit: in.Unit, UnitPriceCents: in.UnitPriceCents}
	if err := spec.check(""); err != nil {
		return nil, err
	}
	if _, err := lockDraftQuote(ctx, c, quoteID); err != nil {
		return nil, err
	}
	l, err := scanLineItem(c.DB.QueryRow(ctx, `INSERT INTO quote_line_items (quote_id, position, description, quantity, unit, unit_price_cents, line_total_cents)
		SELECT $1, coalesce(max(position), 0) + 1, $2, $3::numeric, $4, $5, $6 FROM quote_line_items WHERE quote_id = $1
		RETURNING `+lineItemColumns, quoteID, spec.Description, spec.Quantity.String(), spec.Unit, spec.UnitPriceCents, spec.LineTotalCents))
	if err != nil {
		return nil, err
	}
	if err := markTotalsStale(ctx, c, quoteID); err != nil {
		return nil, err
	}
	return &businesspack.QuoteAddLineItemOutput{LineItem: l, TotalsStale: true}, nil
}

func markTotalsStale(ctx context.Context, c *executor.Call, quoteID uuid.UUID) error {
	_, err := c.DB.Exec(ctx, `UPDATE quotes SET totals_stale = true, updated_at = now() WHERE id = $1 AND NOT totals_stale`, quoteID)
	return err
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
func updateLineItem(ctx context.Context, c *executor.Call, in updateLineItemInput) (*businesspack.QuoteUpdateLineItemOutput, error) {
	var quoteID uuid.UUID
	if err := c.DB.QueryRow(ctx, `SELECT quote_id FROM quote_line_items WHERE id = $1`, in.LineItemID).Scan(&quoteID); err != nil {
		return nil, executor.NotFoundIfNoRows(err, "line item", in.LineItemID)
	}
	// The quote first, then the line: every writer of a quote's lines takes the locks in this order.
	if _, err := lockDraftQuote(ctx, c, quoteID); err != nil {
		return nil, err
	}
	cur, err := scanLineItem(c.DB.QueryRow(ctx, `SELECT `+lineItemColumns+` FROM quote_line_items WHERE id = $1 FOR UPDATE`, in.LineItemID))
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "line item", in.LineItemID)
	}
	next := lineSpec{Description: cur.Description, Quantity: cur.Quantity, Unit: cur.Unit, UnitPriceCents: cur.UnitPriceCents}
	if in.Description != nil {
		next.Description = *in.Description
	}
	if in.Quantity != nil {
		next.Quantity = *in.Quantity
	}
	if in.Unit != nil {
		next.Unit = *in.Unit
	}
	if in.UnitPriceCents != nil {
		next.UnitPriceCents = *in.UnitPriceCents
	}
	if err := next.check(""); err != nil {
		return nil, err
	}
	updated := []string{}
	a, _ := thousandths(cur.Quantity)
	b, _ := thousandths(next.Quantity)
	for _, f := range []struct {
		name    string
		changed bool
	}{
		{"description", next.Description != cur.Description},
		{"quantity", a != b},
		{"unit", next.Unit != cur.Unit},
		{"unit_price_cents", next.UnitPriceCents != cur.UnitPriceCents},
	} {
		if f.changed {
			updated = append(updated, f.name)
		}
	}
	if len(updated) == 0 {
		return &businesspack.QuoteUpdateLineItemOutput{LineItem: cur, UpdatedFields: updated}, nil
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
	return &businesspack.QuoteUpdateLineItemOutput{LineItem: l, UpdatedFields: updated}, nil
}

// calculateTotals sums a draft quote's lines into its subtotal, GST and total (see money.go). A quote that
// has left draft keeps the totals it was sent or answered with, which are returned as they are.
func calculateTotals(ctx context.Context, c *executor.Call, in businesspack.QuoteCalculateTotalsInput) (*businesspack.QuoteCalculateTotalsOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	q, err := lockQuote(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	lines, err := quoteLines(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	changed := false
	if q.Status == "draft" {
		if q, changed, err = refreshTotals(ctx, c, q, lines); err != nil {
			return nil, err
		}
	}
	return &businesspack.QuoteCalculateTotalsOutput{QuoteID: q.QuoteID, Status: q.Status, Changed: changed, Totals: businesspack.QuoteTotals{
		Currency: q.Currency, SubtotalCents: q.SubtotalCents, GSTRatePercent: GSTRatePercent, GSTCents: &q.GSTCents,
		TotalCents: q.TotalCents, LineCount: len(lines), LineItems: lines,
	}}, nil
}

// refreshTotals writes a draft quote's totals from its lines when they are stale or differ.
func refreshTotals(ctx context.Context, c *executor.Call, q businesspack.Quote, lines []businesspack.QuoteLineItem) (businesspack.Quote, bool, error) {
	subtotal, gst, total := totalsOf(lines)
	if !q.TotalsStale && q.SubtotalCents == subtotal && q.GSTCents == gst && q.TotalCents == total {
		return q, false, nil
	}
	q, err := scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET subtotal_cents = $2, gst_cents = $3, total_cents = $4,
			totals_stale = false, updated_at = now()
		WHERE id = $1 RETURNING `+quoteColumns, q.QuoteID, subtotal, gst, total))
	return q, err == nil, err
}

// finalTotals brings a draft quote's totals up to date from its lines as the customer decides on it: a quote
// that leaves draft keeps its totals. It returns the quote and how many lines it has.
func finalTotals(ctx context.Context, c *executor.Call, q businesspack.Quote) (businesspack.Quote, int, error) {
	lines, err := quoteLines(ctx, c, q.QuoteID)
	if err != nil {
		return q, 0, err
	}
	q, _, err = refreshTotals(ctx, c, q, lines)
	return q, len(lines), err
}

// leadStageFor moves the quote's lead along with the quote (sent → quoted, accepted → won) and returns its
// stage.
func leadStageFor(ctx context.Context, c *executor.Call, q businesspack.Quote) (string, error) {
	target := map[string]string{"sent": "quoted", "accepted": "won"}[q.Status]
	if target == "" {
		var stage string
		err := c.DB.QueryRow(ctx, `SELECT stage FROM leads WHERE id = $1`, q.LeadID).Scan(&stage)
		return stage, executor.NotFoundIfNoRows(err, "lead", q.LeadID)
	}
	_, stage, err := advanceLead(ctx, c.DB, q.LeadID, target)
	return stage, err
}

func transitionResult(ctx context.Context, c *executor.Call, q businesspack.Quote, previous string) (*businesspack.QuoteTransitionOutput, error) {
	stage, err := leadStageFor(ctx, c, q)
	if err != nil {
		return nil, err
	}
	return &businesspack.QuoteTransitionOutput{QuoteID: q.QuoteID, Quote: q, PreviousStatus: previous, Changed: q.Status != previous, LeadStage: stage}, nil
}

// requireSendable refuses to send a quote without lines or with stale totals.
func requireSendable(ctx context.Context, c *executor.Call, q businesspack.Quote) error {
	var lines int
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM quote_line_items WHERE quote_id = $1`, q.QuoteID).Scan(&lines); err != nil {
		return err
	}
	switch {
	case lines == 0:
		return executor.Conflict("quote %s has no line items: add them before sending it", q.QuoteID)
	case q.TotalsStale:
		return executor.Conflict("quote %s's totals are stale: run quote.calculate_totals before sending it", q.QuoteID)
	}
	return nil
}

// markQuoteSent records that a draft quote reached the customer some other way (quote.send_to_client
// sends it). It needs lines and fresh totals; the lead moves to quoted. Again changes nothing.
func markQuoteSent(ctx context.Context, c *executor.Call, in businesspack.QuoteMarkSentInput) (*businesspack.QuoteTransitionOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	if in.SentVia == "" {
		in.SentVia = "email"
	}
	q, err := lockQuote(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	previous := q.Status
	switch q.Status {
	case "accepted", "declined":
		return nil, executor.Conflict("quote %s is %s: only a draft quote can be marked sent", quoteID, q.Status)
	case "draft":
		if err := requireSendable(ctx, c, q); err != nil {
			return nil, err
		}
		if q, err = scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET status = 'sent', sent_at = now(), sent_via = $2, updated_at = now()
			WHERE id = $1 RETURNING `+quoteColumns, quoteID, in.SentVia)); err != nil {
			return nil, err
		}
	}
	return transitionResult(ctx, c, q, previous)
}

// decisionClockSkew is how far in the future an acceptance time may be (a phone's clock running ahead).
const decisionClockSkew = 5 * time.Minute

// markQuoteAccepted records that the customer accepted a quote, sent or still a draft (accepted when shown
// in person); a draft's totals are brought up to date first, since they become final. It needs at least one
// line; the lead is won. Again changes nothing; a declined quote is a conflict.
func markQuoteAccepted(ctx context.Context, c *executor.Call, in businesspack.QuoteMarkAcceptedInput) (*businesspack.QuoteTransitionOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	if in.AcceptedAt != nil && in.AcceptedAt.After(time.Now().Add(decisionClockSkew)) {
		return nil, inputError("accepted_at", "%s is in the future", in.AcceptedAt.Format(time.RFC3339))
	}
	q, err := lockQuote(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	previous := q.Status
	switch q.Status {
	case "declined":
		return nil, executor.Conflict("quote %s was declined: it cannot be accepted (make a new quote)", quoteID)
	case "draft":
		var lines int
		if q, lines, err = finalTotals(ctx, c, q); err != nil {
			return nil, err
		}
		if lines == 0 {
			return nil, executor.Conflict("quote %s has no line items: there is nothing to accept", quoteID)
		}
		fallthrough
	case "sent":
		if q, err = scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET status = 'accepted', accepted_at = coalesce($2, now()),
				decision_notes = coalesce($3, decision_notes), updated_at = now()
			WHERE id = $1 RETURNING `+quoteColumns, quoteID, in.AcceptedAt, trimmedText(&in.Notes))); err != nil {
			return nil, err
		}
	}
	return transitionResult(ctx, c, q, previous)
}

// markQuoteDeclined records that the customer declined a quote, sent or still a draft, and why. The lead
// keeps its stage (leads.mark_lost closes it). Again changes nothing; an accepted quote is a conflict.
func markQuoteDeclined(ctx context.Context, c *executor.Call, in businesspack.QuoteMarkDeclinedInput) (*businesspack.QuoteTransitionOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	q, err := lockQuote(ctx, c, quoteID)
	if err != nil {
		return nil, err
	}
	previous := q.Status
	switch q.Status {
	case "accepted":
		return nil, executor.Conflict("quote %s was accepted: it cannot be declined", quoteID)
	case "draft":
		if q, _, err = finalTotals(ctx, c, q); err != nil {
			return nil, err
		}
		fallthrough
	case "sent":
		if q, err = scanQuote(c.DB.QueryRow(ctx, `UPDATE quotes SET status = 'declined', declined_at = now(), decline_reason = $2,
				decision_notes = $3, updated_at = now()
			WHERE id = $1 RETURNING `+quoteColumns, quoteID, trimmedText(&in.Reason), trimmedText(&in.Notes))); err != nil {
			return nil, err
		}
	}
	return transitionResult(ctx, c, q, previous)
}
