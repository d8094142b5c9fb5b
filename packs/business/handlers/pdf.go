package businesshandlers

import (
	"bytes"
	"fmt"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"github.com/gemhq/gem/registry"
)

// pdfDoc builds the business's documents (quotes, job cards, warranty certificates) as A4 PDFs with the
// standard Helvetica font. Text is translated to the font's Windows-1252 encoding; a character it lacks
// (Chinese, emoji) prints as "." (fpdf's translator). The output is deterministic for the same content
// (fixed creation date, sorted catalog), so a retried call writes the same bytes and the file store keeps
// one file.
type pdfDoc struct {
	pdf *fpdf.Fpdf
	tr  func(string) string
}

// pdfWidth is the printable width of an A4 page between 15 mm margins.
const pdfWidth = 180.0

func newPDFDoc(title string, date time.Time) *pdfDoc {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetMargins(15, 15, 15)
	pdf.SetAutoPageBreak(true, 15)
	pdf.SetCreationDate(date)
	pdf.SetModificationDate(date)
	pdf.SetCatalogSort(true)
	d := &pdfDoc{pdf: pdf, tr: pdf.UnicodeTranslatorFromDescriptor("")}
	pdf.SetTitle(d.tr(title), false)
	pdf.SetCreator("GEM", false)
	pdf.AddPage()
	pdf.SetFont("Helvetica", "B", 18)
	pdf.MultiCell(pdfWidth, 9, d.tr(title), "", "L", false)
	pdf.Ln(2)
	return d
}

// letterheadPDF starts a document under the business's letterhead: its name as the title, then its ABN and
// contact details.
func (p *pack) letterheadPDF(date time.Time) *pdfDoc {
	biz := p.cfg.Business.WithDefaults()
	d := newPDFDoc(biz.Name, date)
	d.fields([2]string{"ABN", biz.ABN}, [2]string{"Phone", biz.Phone}, [2]string{"Email", biz.Email}, [2]string{"Address", biz.Address})
	return d
}

// heading adds a section heading.
func (d *pdfDoc) heading(s string) {
	d.pdf.Ln(3)
	d.pdf.SetFont("Helvetica", "B", 12)
	d.pdf.MultiCell(pdfWidth, 6, d.tr(s), "", "L", false)
	d.pdf.Ln(1)
}

// para adds a paragraph of wrapped text.
func (d *pdfDoc) para(s string) {
	d.pdf.SetFont("Helvetica", "", 10)
	d.pdf.MultiCell(pdfWidth, 5, d.tr(s), "", "L", false)
	d.pdf.Ln(1)
}

// fields adds label: value lines, skipping empty values.
func (d *pdfDoc) fields(pairs ...[2]string) {
	for _, p := range pairs {
		if p[1] == "" {
			continue
		}
		d.pdf.SetFont("Helvetica", "B", 10)
		d.pdf.CellFormat(45, 5, d.tr(p[0]), "", 0, "L", false, 0, "")
		d.pdf.SetFont("Helvetica", "", 10)
		d.pdf.MultiCell(pdfWidth-45, 5, d.tr(p[1]), "", "L", false)
	}
}

// table adds a table: widths in mm (summing to at most pdfWidth), aligns "L" or "R" per column. Cells wrap
// onto as many lines as they need.
func (d *pdfDoc) table(headers []string, widths []float64, aligns []string, rows [][]string) {
	const lineH = 5.0
	d.pdf.SetFont("Helvetica", "B", 10)
	d.pdf.SetFillColor(235, 235, 235)
	for i, h := range headers {
		d.pdf.CellFormat(widths[i], 7, d.tr(h), "1", 0, aligns[i], true, 0, "")
	}
	d.pdf.Ln(-1)
	d.pdf.SetFont("Helvetica", "", 10)
	for _, row := range rows {
		lines := 1
		for i, cell := range row {
			lines = max(lines, len(d.pdf.SplitText(d.tr(cell), widths[i]-2)))
		}
		h := float64(lines) * lineH
		if d.pdf.GetY()+h > 297-15 {
			d.pdf.AddPage()
		}
		x, y := d.pdf.GetXY()
		for i, cell := range row {
			d.pdf.Rect(x, y, widths[i], h, "D")
			d.pdf.SetXY(x+1, y)
			d.pdf.MultiCell(widths[i]-2, lineH, d.tr(cell), "", aligns[i], false)
			x += widths[i]
			d.pdf.SetXY(x, y)
		}
		d.pdf.SetXY(15, y+h)
	}
	d.pdf.Ln(2)
}

// bytes renders the document.
func (d *pdfDoc) bytes() ([]byte, error) {
	var b bytes.Buffer
	if err := d.pdf.Output(&b); err != nil {
		return nil, fmt.Errorf("error rendering PDF: %w", err)
	}
	return b.Bytes(), nil
}

// storePDF renders a document into the file store and records it in the call's receipt.
func (p *pack) storePDF(c interface{ RecordFile(registry.FileWritten) }, d *pdfDoc, name string) (registry.FileWritten, error) {
	data, err := d.bytes()
	if err != nil {
		return registry.FileWritten{}, err
	}
	f, err := p.files.Put(name, ".pdf", "application/pdf", data)
	if err != nil {
		return registry.FileWritten{}, err
	}
	c.RecordFile(f)
	return f, nil
}
