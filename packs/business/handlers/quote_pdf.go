package businesshandlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
)

// quoteDocument is what a quote says to its customer: the quote, its lines and totals, who it is for and
// where, and what the inspection found.
type quoteDocument struct {
	Quote         businesspack.Quote
	Lines         []businesspack.QuoteLineItem
	SubtotalCents int64
	GSTCents      int64
	TotalCents    int64
	Customer      string
	Phone, Email  *string
	Site          string
	Inspection    inspectionData
}

// loadQuoteDocument reads a quote for paperwork and messages. A draft's totals are worked out from its
// lines (they may be stale in the row); a quote that has left draft shows the totals it was sent with.
func loadQuoteDocument(ctx context.Context, c *executor.Call, q businesspack.Quote) (quoteDocument, error) {
	d := quoteDocument{Quote: q, SubtotalCents: q.SubtotalCents, GSTCents: q.GSTCents, TotalCents: q.TotalCents}
	var err error
	if d.Lines, err = quoteLines(ctx, c, q.QuoteID); err != nil {
		return d, err
	}
	if q.Status == "draft" {
		d.SubtotalCents, d.GSTCents, d.TotalCents = totalsOf(d.Lines)
	}
	inspectionID, err := uuid.Parse(q.InspectionID) // read from the quote's row
	if err != nil {
		return d, err
	}
	if d.Inspection, err = loadInspection(ctx, c, inspectionID); err != nil {
		return d, err
	}
	var leadAddress *string
	if err := c.DB.QueryRow(ctx, `SELECT name, phone, email, address FROM leads WHERE id = $1`, q.LeadID).
		Scan(&d.Customer, &d.Phone, &d.Email, &leadAddress); err != nil {
		return d, executor.NotFoundIfNoRows(err, "lead", q.LeadID)
	}
	if q.CustomerID != nil {
		// The customer entity's details win over the lead's: it is who the business deals with now.
		var name string
		var phone, email *string
		err := c.DB.QueryRow(ctx, `SELECT name, phone, email FROM entities WHERE id = $1`, *q.CustomerID).Scan(&name, &phone, &email)
		if err != nil {
			return d, executor.NotFoundIfNoRows(err, "customer", *q.CustomerID)
		}
		d.Customer = name
		if phone != nil {
			d.Phone = phone
		}
		if email != nil {
			d.Email = email
		}
	}
	switch {
	case d.Inspection.Inspection.SiteAddress != nil:
		d.Site = *d.Inspection.Inspection.SiteAddress
	case leadAddress != nil:
		d.Site = *leadAddress
	}
	return d, nil
}

// quantityText shows a line's quantity and unit: "8 m", "2.5 tube".
func quantityText(l businesspack.QuoteLineItem) string { return l.Quantity.String() + " " + l.Unit }

// generateQuotePDF writes a quote as an A4 PDF into the file store: the business's letterhead, the
// customer and site, what the inspection found, the lines, subtotal, GST and total, and the terms. The
// same quote gives the same bytes, so generating it again writes nothing new.
func (p *pack) generateQuotePDF(ctx context.Context, c *executor.Call, in businesspack.QuoteGeneratePDFInput) (*businesspack.QuoteGeneratePDFOutput, error) {
	quoteID, err := executor.RecordID("quote_id", in.QuoteID)
	if err != nil {
		return nil, err
	}
	if in.Template == "" {
		in.Template = "standard"
	}
	if _, err := p.today(); err != nil {
		return nil, err // the business's time zone dates the document
	}
	q, err := scanQuote(c.DB.QueryRow(ctx, `SELECT `+quoteColumns+` FROM quotes WHERE id = $1`, quoteID))
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "quote", quoteID)
	}
	d, err := loadQuoteDocument(ctx, c, q)
	if err != nil {
		return nil, err
	}
	doc := p.quotePDF(d)
	f, err := p.storePDF(c, doc, "quote-"+quoteLabel(q.Number)+".pdf")
	if err != nil {
		return nil, err
	}
	return &businesspack.QuoteGeneratePDFOutput{
		FileRef: f.Ref, QuoteID: q.QuoteID, Template: in.Template, Name: f.Name, ContentType: f.ContentType,
		Bytes: f.Bytes, SHA256: f.SHA256, TotalCents: d.TotalCents,
	}, nil
}

// quotePDF lays out the standard quote template.
func (p *pack) quotePDF(d quoteDocument) *pdfDoc {
	biz := p.cfg.Business.WithDefaults()
	q := d.Quote
	// The quote's last change dates the document, so its bytes depend only on the quote.
	issued := q.UpdatedAt.In(p.loc)
	doc := p.letterheadPDF(issued)

	doc.heading("Quote " + quoteLabel(q.Number))
	doc.fields(
		[2]string{"Customer", d.Customer},
		[2]string{"Site", d.Site},
		[2]string{"Phone", textOrEmpty(d.Phone)},
		[2]string{"Email", textOrEmpty(d.Email)},
	)
	doc.fields(
		[2]string{"Quote", quoteLabel(q.Number)},
		[2]string{"Date", issued.Format("2 Jan 2006")},
		[2]string{"Valid until", q.ValidUntil.Time().Format("2 Jan 2006")},
	)

	if defects := sortedDefects(d.Inspection.Defects); len(defects) > 0 {
		doc.heading("What we found")
		for _, def := range defects {
			doc.para(fmt.Sprintf("%s (%s severity): %s", upperFirst(def.Category), def.Severity, defectText(def)))
		}
	}

	doc.heading("Work and prices")
	rows := make([][]string, len(d.Lines))
	for i, l := range d.Lines {
		rows[i] = []string{l.Description, l.Quantity.String(), l.Unit, formatAUD(l.UnitPriceCents), formatAUD(l.LineTotalCents)}
	}
	if len(rows) == 0 {
		doc.para("This quote has no lines yet.")
	} else {
		doc.table([]string{"Description", "Qty", "Unit", "Unit price", "Amount"}, []float64{86, 16, 18, 30, 30},
			[]string{"L", "R", "L", "R", "R"}, rows)
	}
	doc.fields(
		[2]string{"Subtotal (excl. GST)", formatAUD(d.SubtotalCents)},
		[2]string{fmt.Sprintf("GST (%d%%)", GSTRatePercent), formatAUD(d.GSTCents)},
		[2]string{"Total (incl. GST)", formatAUD(d.TotalCents)},
	)
	if q.Notes != nil {
		doc.heading("Notes")
		doc.para(*q.Notes)
	}
	doc.heading("Terms")
	terms := []string{fmt.Sprintf("Prices are in Australian dollars. Unit prices exclude GST; GST is %d%% of the subtotal.", GSTRatePercent),
		"This quote is valid until " + q.ValidUntil.Time().Format("2 Jan 2006") + "."}
	switch {
	case biz.Phone != "":
		terms = append(terms, "To accept it, reply to us or call "+biz.Phone+".")
	default:
		terms = append(terms, "To accept it, reply to us.")
	}
	doc.para(strings.Join(terms, " "))
	return doc
}
