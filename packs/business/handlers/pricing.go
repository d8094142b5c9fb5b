package businesshandlers

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/gemhq/gem/executor"
)

// A pricing profile is a price book that quote.create_from_inspection prices an inspection's defects and
// measurements with. Every price is in cents, excluding GST.
type pricingProfile struct {
	// name is what pricing_profile says.
	name string
	// repairs prices the defects of each category.
	repairs map[string]repairRate
	// severityPercent scales a repair's price by the defect's severity.
	severityPercent map[string]int64
	// setupCents is site setup and safety, once per quote that has any repair.
	setupCents int64
	// steepCents is added when a roof pitch over steepPitchDeg was measured.
	steepCents int64
	// treatmentPerM2Cents, when not 0, adds a roof treatment over the measured roof area.
	treatmentPerM2Cents int64
	// reportCents, when not 0, adds a written report (insurance work needs one).
	reportCents int64
	// suffix ends every repair's description (what the profile promises).
	suffix string
}

// repairRate prices one category of defect: per metre of the matching measurement when the inspection
// measured it, else per defect.
type repairRate struct {
	work          string
	eachCents     int64
	perMetreCents int64
	measuredBy    string // a measurement kind in metres, or ""
}

// steepPitchDeg is the pitch above which a roof needs extra safety equipment.
const steepPitchDeg = 30

// defaultPricingProfile is the profile used when none is named.
const defaultPricingProfile = "standard"

// severityScale is how every profile scales a repair by the defect's severity, in percent.
var severityScale = map[string]int64{"low": 100, "medium": 125, "high": 160}

// pricingProfiles are the named price books.
var pricingProfiles = map[string]pricingProfile{
	"standard": {
		name: "standard",
		repairs: map[string]repairRate{
			"tile":     {work: "Replace cracked or broken roof tiles", eachCents: 18_500},
			"ridge":    {work: "Rebed and repoint ridge capping", eachCents: 65_000, perMetreCents: 4_800, measuredBy: "ridge_length"},
			"valley":   {work: "Replace valley iron and reseal", eachCents: 52_000, perMetreCents: 9_500, measuredBy: "valley_length"},
			"flashing": {work: "Refix and reseal flashings", eachCents: 34_000},
			"gutter":   {work: "Replace damaged guttering", eachCents: 29_000, perMetreCents: 6_200, measuredBy: "gutter_length"},
			"leak":     {work: "Trace and repair roof leak", eachCents: 42_000},
			"other":    {work: "Roof repair as described", eachCents: 26_000},
		},
		severityPercent: severityScale,
		setupCents:      35_000,
		steepCents:      28_000,
	},
	"premium": {
		name: "premium",
		repairs: map[string]repairRate{
			"tile":     {work: "Replace cracked or broken roof tiles with matched new tiles", eachCents: 24_000},
			"ridge":    {work: "Rebed and repoint ridge capping with flexible pointing", eachCents: 85_000, perMetreCents: 6_500, measuredBy: "ridge_length"},
			"valley":   {work: "Replace valley iron with Colorbond and reseal", eachCents: 68_000, perMetreCents: 12_500, measuredBy: "valley_length"},
			"flashing": {work: "Replace and seal flashings", eachCents: 46_000},
			"gutter":   {work: "Replace guttering with Colorbond quad", eachCents: 38_000, perMetreCents: 8_500, measuredBy: "gutter_length"},
			"leak":     {work: "Trace and repair roof leak, with a water test", eachCents: 55_000},
			"other":    {work: "Roof repair as described", eachCents: 34_000},
		},
		severityPercent:     severityScale,
		setupCents:          45_000,
		steepCents:          35_000,
		treatmentPerM2Cents: 2_200,
		suffix:              " (10-year workmanship warranty)",
	},
	"insurance": {
		name: "insurance",
		repairs: map[string]repairRate{
			"tile":     {work: "Make safe and replace storm-damaged roof tiles", eachCents: 21_000},
			"ridge":    {work: "Rebed and repoint damaged ridge capping", eachCents: 72_000, perMetreCents: 5_400, measuredBy: "ridge_length"},
			"valley":   {work: "Replace damaged valley iron and reseal", eachCents: 58_000, perMetreCents: 10_500, measuredBy: "valley_length"},
			"flashing": {work: "Refix and reseal damaged flashings", eachCents: 38_000},
			"gutter":   {work: "Replace damaged guttering", eachCents: 32_000, perMetreCents: 6_900, measuredBy: "gutter_length"},
			"leak":     {work: "Trace and repair roof leak; make good water damage to roof space", eachCents: 48_000},
			"other":    {work: "Roof repair as described", eachCents: 29_000},
		},
		severityPercent: severityScale,
		setupCents:      38_000,
		steepCents:      30_000,
		reportCents:     29_500,
	},
}

// pricingProfileNames lists the profiles, sorted.
func pricingProfileNames() []string {
	names := make([]string, 0, len(pricingProfiles))
	for n := range pricingProfiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookupPricingProfile returns the named profile (the default for ""), or a validation_error listing them.
func lookupPricingProfile(name string) (pricingProfile, error) {
	if name == "" {
		name = defaultPricingProfile
	}
	p, ok := pricingProfiles[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return p, executor.Invalid("pricing_profile %q is not one of %s", name, strings.Join(pricingProfileNames(), ", "))
	}
	return p, nil
}

// priceInspection turns an inspection's defects and measurements into a quote's first lines: one per
// category priced per metre when its length was measured (at the worst severity's rate), else one per
// category and severity priced per defect; then site setup, a steep-roof allowance, a roof treatment and
// a report as the profile says.
func (p pricingProfile) priceInspection(d inspectionData) []lineSpec {
	var lines []lineSpec
	add := func(description, quantity, unit string, unitPriceCents int64) {
		lines = append(lines, newLineSpec(description, quantity, unit, unitPriceCents))
	}
	metric := func(kind string) *big.Rat {
		sum := new(big.Rat)
		for _, v := range d.metricValues(kind) {
			sum.Add(sum, v)
		}
		return sum
	}
	defects := sortedDefects(d.Defects)
	for _, category := range categoryOrder {
		rate := p.repairs[category]
		var inCategory []defect
		for _, def := range defects {
			if def.Category == category {
				inCategory = append(inCategory, def)
			}
		}
		if len(inCategory) == 0 {
			continue
		}
		if length := metric(rate.measuredBy); rate.perMetreCents > 0 && length.Sign() > 0 {
			worst := inCategory[0].Severity // sorted: the most severe first
			add(repairDescription(rate.work+p.suffix, worst, inCategory), length.FloatString(3), "m",
				scalePercent(rate.perMetreCents, p.severityPercent[worst]))
			continue
		}
		for _, severity := range severityOrder {
			var same []defect
			for _, def := range inCategory {
				if def.Severity == severity {
					same = append(same, def)
				}
			}
			if len(same) > 0 {
				add(repairDescription(rate.work+p.suffix, severity, same), fmt.Sprint(len(same)), "each",
					scalePercent(rate.eachCents, p.severityPercent[severity]))
			}
		}
	}
	if len(lines) > 0 {
		add("Site setup, safety equipment and edge protection", "1", "each", p.setupCents)
	}
	var steepest *big.Rat
	for _, v := range d.metricValues("roof_pitch") {
		if steepest == nil || v.Cmp(steepest) > 0 {
			steepest = v
		}
	}
	if steepest != nil && steepest.Cmp(big.NewRat(steepPitchDeg, 1)) > 0 && p.steepCents > 0 {
		add(fmt.Sprintf("Steep roof access and safety (pitch %s degrees)", trimZeros(steepest.FloatString(3))), "1", "each", p.steepCents)
	}
	if area := metric("roof_area"); p.treatmentPerM2Cents > 0 && area.Sign() > 0 {
		add("Clean, prime and seal the roof surface", area.FloatString(3), "m2", p.treatmentPerM2Cents)
	}
	if p.reportCents > 0 {
		add("Insurance report with photos and scope of works", "1", "each", p.reportCents)
	}
	return lines
}

// repairDescription names the work, the severity and what the defects' notes say, within a line's 500
// characters.
func repairDescription(work, severity string, defects []defect) string {
	var notes []string
	for _, d := range defects {
		if d.Notes != nil {
			notes = append(notes, *d.Notes)
		}
	}
	s := fmt.Sprintf("%s (%s severity)", work, severity)
	if len(notes) > 0 {
		s += ": " + strings.Join(notes, "; ")
	}
	return truncateRunes(s, maxLineDescription)
}

// metricValues are the metric values of the inspection's measurements of a kind, exact.
func (d inspectionData) metricValues(kind string) []*big.Rat {
	var values []*big.Rat
	for _, m := range d.Measurements {
		if m.Kind == kind && m.MetricValue != nil {
			v, _ := new(big.Rat).SetString(m.MetricValue.String())
			values = append(values, v)
		}
	}
	return values
}

// scalePercent returns cents × percent / 100, rounded half up to a whole cent.
func scalePercent(cents, percent int64) int64 {
	return (cents*percent + 50) / 100
}

// trimZeros drops trailing zeros after a decimal point: 32.500 → 32.5, 40.000 → 40.
func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
