package businesshandlers

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// jobFacts is what paperwork and messages about a job say: who it is for, where, and what the work is.
type jobFacts struct {
	businesspack.Job
	QuoteNumber int64
	Customer    string
	Phone       *string
	Email       *string
	Site        string
	Lines       []jobLine
	SiteNotes   []jobSiteNote
}

// jobLine is a line of the accepted quote: the scope of the work.
type jobLine struct {
	Description    string
	Quantity       string
	Unit           string
	LineTotalCents int64
}

type jobSiteNote struct {
	Note      string
	Author    *string
	CreatedAt time.Time
}

// loadJobFacts reads a job with its customer (the quote's customer, else the lead), its site (the
// inspection's site entity or site address, else the lead's address), the accepted quote's lines and the site notes.
func loadJobFacts(ctx context.Context, c *executor.Call, id uuid.UUID) (jobFacts, error) {
	j, err := shareJob(ctx, c, id)
	if err != nil {
		return jobFacts{}, err
	}
	f := jobFacts{Job: j}
	var leadName string
	var leadPhone, leadEmail, leadAddress, leadSuburb, cuName, cuPhone, cuEmail, cuAddress, cuSuburb, cuPostcode *string
	var siName, siAddress, siSuburb, siPostcode, inspAddress *string
	err = c.DB.QueryRow(ctx, `SELECT q.number, l.name, l.phone, l.email, l.address, l.suburb,
			cu.name, cu.phone, cu.email, cu.address, cu.suburb, cu.postcode, si.name, si.address, si.suburb, si.postcode,
			i.site_address
		FROM quotes q JOIN leads l ON l.id = q.lead_id
		LEFT JOIN entities cu ON cu.id = q.customer_id
		LEFT JOIN inspections i ON i.id = q.inspection_id
		LEFT JOIN entities si ON si.id = i.site_id
		WHERE q.id = $1`, j.QuoteID).Scan(&f.QuoteNumber, &leadName, &leadPhone, &leadEmail, &leadAddress, &leadSuburb,
		&cuName, &cuPhone, &cuEmail, &cuAddress, &cuSuburb, &cuPostcode, &siName, &siAddress, &siSuburb, &siPostcode, &inspAddress)
	if err != nil {
		return jobFacts{}, executor.NotFoundIfNoRows(err, "quote", j.QuoteID)
	}
	f.Customer = firstText(cuName, &leadName)
	if s := firstText(cuPhone, leadPhone); s != "" {
		f.Phone = &s
	}
	if s := firstText(cuEmail, leadEmail); s != "" {
		f.Email = &s
	}
	switch {
	case siAddress != nil || siSuburb != nil:
		f.Site = joinText(siAddress, siSuburb, siPostcode)
	case firstText(inspAddress) != "":
		f.Site = firstText(inspAddress)
	case siName != nil:
		f.Site = *siName
	case leadAddress != nil || leadSuburb != nil:
		f.Site = joinText(leadAddress, leadSuburb)
	default:
		f.Site = joinText(cuAddress, cuSuburb, cuPostcode)
	}
	f.Lines, err = executor.QueryList(ctx, c.DB, func(row pgx.Row) (jobLine, error) {
		var l jobLine
		err := row.Scan(&l.Description, &l.Quantity, &l.Unit, &l.LineTotalCents)
		l.Quantity = trimDecimal(l.Quantity)
		return l, err
	}, `SELECT description, quantity::text, unit, line_total_cents FROM quote_line_items WHERE quote_id = $1 ORDER BY position`, j.QuoteID)
	if err != nil {
		return jobFacts{}, err
	}
	f.SiteNotes, err = executor.QueryList(ctx, c.DB, func(row pgx.Row) (jobSiteNote, error) {
		var n jobSiteNote
		return n, row.Scan(&n.Note, &n.Author, &n.CreatedAt)
	}, `SELECT note, author, created_at FROM job_site_notes WHERE job_id = $1 ORDER BY created_at, id`, id)
	if err != nil {
		return jobFacts{}, err
	}
	return f, nil
}

// firstText is the first of the texts that is set and not blank, or "".
func firstText(texts ...*string) string {
	for _, s := range texts {
		if s != nil && !isBlankText(*s) {
			return strings.TrimSpace(*s)
		}
	}
	return ""
}

// joinText joins the texts that are set and not blank with ", ".
func joinText(texts ...*string) string {
	var parts []string
	for _, s := range texts {
		if s != nil && !isBlankText(*s) {
			parts = append(parts, strings.TrimSpace(*s))
		}
	}
	return strings.Join(parts, ", ")
}

// trimDecimal drops a decimal's trailing zeros: "152.500" → "152.5", "3.000" → "3".
func trimDecimal(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// docDate is how documents print a date: "Tue 1 Dec 2026".
func docDate(d businesspack.Date) string { return d.Time().Format("Mon 2 Jan 2006") }

// jobDates prints a job's dates.
func jobDates(j businesspack.Job) string {
	switch {
	case j.StartDate == nil:
		return "not scheduled yet"
	case j.EndDate == nil || *j.EndDate == *j.StartDate:
		return docDate(*j.StartDate)
	default:
		return docDate(*j.StartDate) + " to " + docDate(*j.EndDate)
	}
}

// textOrEmpty is the text s points to, or "".
func textOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// workTable adds the job's work (the accepted quote's lines, without prices) as a numbered table.
func workTable(d *pdfDoc, lines []jobLine) {
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = []string{strconv.Itoa(i + 1), l.Description, l.Quantity, l.Unit}
	}
	d.table([]string{"#", "Work", "Qty", "Unit"}, []float64{10, 120, 25, 25}, []string{"R", "L", "R", "L"}, rows)
}

type createJobCardInput struct {
	JobID  uuid.UUID `json:"job_id"`
	Format string    `json:"format"`
}

// storedFile describes a file a tool put in GEM's file store.
type storedFile struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
}

func storedFileOf(f registry.FileWritten) storedFile {
	return storedFile{Name: f.Name, ContentType: f.ContentType, Bytes: f.Bytes, SHA256: f.SHA256}
}

type createJobCardOutput struct {
	JobCardRef string    `json:"job_card_ref"`
	JobID      uuid.UUID `json:"job_id"`
	Format     string    `json:"format"`
	storedFile
}

// createJobCard writes the crew's card for a job into the file store, as plain text (the default) or a
// PDF: customer, site, dates, notes, the scope of work from the accepted quote (quantities, no prices)
// and the site notes.
func (p *pack) createJobCard(ctx context.Context, c *executor.Call, in createJobCardInput) (*createJobCardOutput, error) {
	if in.Format == "" {
		in.Format = "text"
	}
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	f, err := loadJobFacts(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	label := jobLabel(f.Number)
	details := [][2]string{
		{"Status", f.Status},
		{"Dates", jobDates(f.Job)},
		{"Customer", f.Customer},
		{"Phone", textOrEmpty(f.Phone)},
		{"Email", textOrEmpty(f.Email)},
		{"Site", f.Site},
		{"Quote", quoteLabel(f.QuoteNumber)},
		{"Job notes", textOrEmpty(f.Notes)},
		{"Schedule notes", textOrEmpty(f.ScheduleNotes)},
	}
	notes := make([]string, len(f.SiteNotes))
	for i, n := range f.SiteNotes {
		notes[i] = docDate(businesspack.DateOf(n.CreatedAt.In(p.loc)))
		if n.Author != nil {
			notes[i] += ", " + *n.Author
		}
		notes[i] += ": " + n.Note
	}

	var written registry.FileWritten
	if in.Format == "pdf" {
		d := newPDFDoc("Job card "+label, today.Time())
		d.fields(details...)
		d.heading("Scope of work")
		workTable(d, f.Lines)
		d.heading("Site notes")
		if len(notes) == 0 {
			d.para("None recorded.")
		}
		for _, n := range notes {
			d.para(n)
		}
		if written, err = p.storePDF(c, d, "job-card-"+label+".pdf"); err != nil {
			return nil, err
		}
	} else {
		var b strings.Builder
		title := "JOB CARD " + label
		fmt.Fprintf(&b, "%s\n%s\n\n", title, strings.Repeat("=", len(title)))
		for _, d := range details {
			if d[1] != "" {
				fmt.Fprintf(&b, "%-15s %s\n", d[0]+":", d[1])
			}
		}
		b.WriteString("\nScope of work\n-------------\n")
		if len(f.Lines) == 0 {
			b.WriteString("(the quote has no lines)\n")
		}
		for i, l := range f.Lines {
			fmt.Fprintf(&b, "%d. %s (%s %s)\n", i+1, l.Description, l.Quantity, l.Unit)
		}
		b.WriteString("\nSite notes\n----------\n")
		if len(notes) == 0 {
			b.WriteString("None recorded.\n")
		}
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		if written, err = p.files.Put("job-card-"+label+".txt", ".txt", "text/plain; charset=utf-8", []byte(b.String())); err != nil {
			return nil, err
		}
		c.RecordFile(written)
	}
	return &createJobCardOutput{JobCardRef: written.Ref, JobID: in.JobID, Format: in.Format, storedFile: storedFileOf(written)}, nil
}

type warrantyCertificateInput struct {
	JobID        uuid.UUID `json:"job_id"`
	WarrantyTerm string    `json:"warranty_term"`
	Template     string    `json:"template"`
}

type warrantyCertificateOutput struct {
	FileRef      string             `json:"file_ref"`
	JobID        uuid.UUID          `json:"job_id"`
	WarrantyTerm string             `json:"warranty_term"`
	Template     string             `json:"template"`
	CompletedOn  businesspack.Date  `json:"completed_on"`
	ExpiresOn    *businesspack.Date `json:"expires_on"`
	storedFile
}

// warrantyTermRe reads a term that starts with a period ("10 years", "7-year workmanship", "18 months").
var warrantyTermRe = regexp.MustCompile(`(?i)^\s*(\d{1,3})\s*-?\s*(years?|yrs?|months?|mths?|mos?|weeks?|wks?|days?)\b`)

// warrantyExpiry is the day a warranty of the term runs out when it starts on the day given, or nil for a
// term that is not a period (such as "lifetime").
func warrantyExpiry(start businesspack.Date, term string) *businesspack.Date {
	m := warrantyTermRe.FindStringSubmatch(term)
	if m == nil {
		return nil
	}
	n, _ := strconv.Atoi(m[1])
	var end businesspack.Date
	switch unit := strings.ToLower(m[2]); {
	case strings.HasPrefix(unit, "y"):
		end = start.AddDate(n, 0, 0)
	case strings.HasPrefix(unit, "m"):
		end = start.AddDate(0, n, 0)
	case strings.HasPrefix(unit, "w"):
		end = start.AddDays(7 * n)
	default:
		end = start.AddDays(n)
	}
	return &end
}

// warrantyTerms is the standard template's wording.
const warrantyTerms = "The work listed above is guaranteed against faults in workmanship for the warranty term, counted " +
	"from the completion date. If a fault appears, tell us in writing as soon as you notice it and we will inspect it " +
	"and put right, at no cost to you, any fault caused by our work. The warranty does not cover damage from storms, " +
	"hail, falling trees or other events beyond our control, wear from normal ageing, or work done on the roof by " +
	"others after we finished. Manufacturers' warranties on materials apply as well, on their own terms. This warranty " +
	"is in addition to your rights under the Australian Consumer Law."

// generateWarrantyCertificate puts the warranty of a finished job into the file store as a
// PDF under the business's letterhead: customer, site, job, completion date, term (and when it runs out, for a term such as "10 years")
// and the work covered.
func (p *pack) generateWarrantyCertificate(ctx context.Context, c *executor.Call, in warrantyCertificateInput) (*warrantyCertificateOutput, error) {
	term := strings.TrimSpace(in.WarrantyTerm)
	if term == "" {
		return nil, executor.Invalid("warranty_term is empty: give the term, like \"10 years\"")
	}
	if in.Template == "" {
		in.Template = "standard"
	}
	today, err := p.today()
	if err != nil {
		return nil, err
	}
	f, err := loadJobFacts(ctx, c, in.JobID)
	if err != nil {
		return nil, err
	}
	if f.Status != "completed" {
		return nil, executor.Conflict("job %s is %s: a warranty certificate is issued once the job is completed", in.JobID, f.Status)
	}
	completed := businesspack.DateOf(f.CompletedAt.In(p.loc))
	expires := warrantyExpiry(completed, term)
	label := jobLabel(f.Number)

	d := p.letterheadPDF(today.Time())
	d.heading("Warranty certificate")
	validUntil := ""
	if expires != nil {
		validUntil = docDate(*expires)
	}
	d.fields(
		[2]string{"Certificate", "WC-" + label},
		[2]string{"Customer", f.Customer},
		[2]string{"Site", f.Site},
		[2]string{"Job", label},
		[2]string{"Work completed", docDate(completed)},
		[2]string{"Warranty term", term},
		[2]string{"Valid until", validUntil},
		[2]string{"Issued", docDate(today)},
	)
	d.heading("Work covered")
	workTable(d, f.Lines)
	d.heading("Terms")
	d.para(warrantyTerms)
	written, err := p.storePDF(c, d, "warranty-"+label+".pdf")
	if err != nil {
		return nil, err
	}
	return &warrantyCertificateOutput{FileRef: written.Ref, JobID: in.JobID, WarrantyTerm: term, Template: in.Template,
		CompletedOn: completed, ExpiresOn: expires, storedFile: storedFileOf(written)}, nil
}
