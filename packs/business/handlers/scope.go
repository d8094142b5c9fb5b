package businesshandlers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
)

// Scope summary formats.
const (
	scopeSections = "sections"
	scopeBullet   = "bullet"
)

// severityOrder and categoryOrder order defects in a scope: the most severe first, then by category.
var (
	severityOrder = []string{"high", "medium", "low"}
	categoryOrder = []string{"tile", "ridge", "valley", "flashing", "gutter", "leak", "other"}
)

// generateScopeSummary writes the scope of works an inspection found, from its records: the site,
// measurements, defects by severity and category with their notes, failed checklist items and the number of
// photos. It only reads; the same records always give the same text.
func generateScopeSummary(ctx context.Context, c *executor.Call, in businesspack.InspectionGenerateScopeSummaryInput) (*businesspack.InspectionGenerateScopeSummaryOutput, error) {
	id, err := executor.RecordID("inspection_id", in.InspectionID)
	if err != nil {
		return nil, err
	}
	if in.Format == "" {
		in.Format = scopeSections
	}
	d, err := loadInspection(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return &businesspack.InspectionGenerateScopeSummaryOutput{
		ScopeText: scopeSummary(d, in.Format), InspectionID: id.String(), Format: in.Format,
		InspectionStatus: d.Inspection.Status, Counts: d.counts(),
	}, nil
}

// scopeSummary renders an inspection's scope as plain text, in sections (headed blocks) or as one bullet
// list.
func scopeSummary(d inspectionData, format string) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	site := "no site address recorded"
	if d.Inspection.SiteAddress != nil {
		site = *d.Inspection.SiteAddress
	}
	defects := sortedDefects(d.Defects)
	var failed []checklistItem
	var passed, na, unassessed int
	for _, item := range d.Checklist {
		switch {
		case item.Status == nil:
			unassessed++
		case *item.Status == "fail":
			failed = append(failed, item)
		case *item.Status == "pass":
			passed++
		default:
			na++
		}
	}

	if format == scopeBullet {
		line("- Site: %s", site)
		line("- Customer: %s", d.LeadName)
		if d.Inspection.Notes != nil {
			line("- Notes: %s", *d.Inspection.Notes)
		}
		if d.Inspection.Summary != nil {
			line("- Summary: %s", *d.Inspection.Summary)
		}
		for _, m := range d.Measurements {
			line("- Measurement: %s", measurementText(m))
		}
		for _, def := range defects {
			line("- Defect (%s, %s): %s", def.Severity, def.Category, defectText(def))
		}
		for _, item := range failed {
			line("- Failed check: %s", checklistText(item))
		}
		line("- Checklist: %d failed, %d passed, %d not applicable, %d not assessed", len(failed), passed, na, unassessed)
		line("- Photos: %d", len(d.Photos))
		return strings.TrimRight(b.String(), "\n")
	}

	line("SCOPE OF WORKS")
	line("Site: %s", site)
	line("Customer: %s", d.LeadName)
	if d.Inspection.Inspector != nil {
		line("Inspector: %s", *d.Inspection.Inspector)
	}
	line("Inspection status: %s", d.Inspection.Status)
	if d.Inspection.Notes != nil {
		line("Notes: %s", *d.Inspection.Notes)
	}
	if d.Inspection.Summary != nil {
		line("Summary: %s", *d.Inspection.Summary)
	}

	line("\nMEASUREMENTS")
	if len(d.Measurements) == 0 {
		line("- none recorded")
	}
	for _, m := range d.Measurements {
		line("- %s", measurementText(m))
	}

	line("\nDEFECTS (%d)", len(defects))
	if len(defects) == 0 {
		line("- none recorded")
	}
	for _, severity := range severityOrder {
		first := true
		for _, def := range defects {
			if def.Severity != severity {
				continue
			}
			if first {
				line("%s severity:", upperFirst(severity))
				first = false
			}
			line("- %s: %s", upperFirst(def.Category), defectText(def))
		}
	}

	line("\nCHECKLIST")
	if len(failed) > 0 {
		line("Failed (%d):", len(failed))
	}
	for _, item := range failed {
		line("- %s", checklistText(item))
	}
	line("Passed: %d. Not applicable: %d. Not assessed: %d.", passed, na, unassessed)

	line("\nPHOTOS")
	line("%s attached.", countNoun(len(d.Photos), "photo"))
	return strings.TrimRight(b.String(), "\n")
}

// sortedDefects orders defects by severity (high first), then category, keeping the recorded order within.
func sortedDefects(defects []defect) []defect {
	out := slices.Clone(defects)
	slices.SortStableFunc(out, func(a, b defect) int {
		if d := slices.Index(severityOrder, a.Severity) - slices.Index(severityOrder, b.Severity); d != 0 {
			return d
		}
		return slices.Index(categoryOrder, a.Category) - slices.Index(categoryOrder, b.Category)
	})
	return out
}

func measurementText(m measurement) string {
	name := strings.ReplaceAll(m.Kind, "_", " ")
	if m.Label != nil {
		name = *m.Label
	}
	s := fmt.Sprintf("%s: %s %s", name, m.Value, m.Unit)
	if m.MetricUnit != nil && *m.MetricUnit != m.Unit {
		s += fmt.Sprintf(" (%s %s)", *m.MetricValue, *m.MetricUnit)
	}
	if m.Notes != nil {
		s += "; " + *m.Notes
	}
	return s
}

func defectText(d defect) string {
	s := "no notes"
	if d.Notes != nil {
		s = *d.Notes
	}
	if d.Location != nil {
		s += " (at " + *d.Location + ")"
	}
	if n := len(d.PhotoRefs); n > 0 {
		s += "; " + countNoun(n, "photo")
	}
	return s
}

func checklistText(item checklistItem) string {
	if item.Notes != nil {
		return item.ItemKey + ": " + *item.Notes
	}
	return item.ItemKey
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
