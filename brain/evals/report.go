package evals

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode"
)

// WriteText prints a report for a person: a table of the metrics per split, then every miss with what came
// instead, in file order, so two runs diff.
func (r *Report) WriteText(w io.Writer) { WriteSideBySide(w, []*Report{r}) }

// WriteSideBySide prints reports of one suite run against different models side by side: a column per split
// and model, then each model's misses. One report prints as WriteText does.
func WriteSideBySide(w io.Writer, reports []*Report) {
	if len(reports) == 0 {
		return
	}
	title := reports[0].Suite + " suite"
	var models []string
	for _, r := range reports {
		if r.Model != "" {
			models = append(models, r.Model)
		}
	}
	if len(models) > 0 {
		title += ": " + strings.Join(models, " | ")
	}
	if runs := reports[0].Runs; runs > 1 {
		title += fmt.Sprintf(" (each case %d times)", runs)
	}
	fmt.Fprintln(w, title)
	if len(reports) == 1 && reports[0].Skipped != "" {
		fmt.Fprintf(w, "  skipped: %s\n", reports[0].Skipped)
		return
	}
	type column struct {
		model string
		s     SplitReport
	}
	var columns []column
	for _, split := range Splits {
		for _, r := range reports {
			for _, s := range r.Splits {
				if s.Split == split {
					columns = append(columns, column{r.Model, s})
				}
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{""}
	counts := []string{"cases"}
	metrics := map[string]bool{}
	for _, c := range columns {
		if len(reports) > 1 {
			header = append(header, c.s.Split+" "+c.model)
		} else {
			header = append(header, c.s.Split)
		}
		if c.s.Asks > 0 {
			counts = append(counts, fmt.Sprintf("%d (%d + %d asks + %d none)", c.s.Cases, c.s.Relevant, c.s.Asks, c.s.Irrelevant))
		} else {
			counts = append(counts, fmt.Sprintf("%d (%d + %d none)", c.s.Cases, c.s.Relevant, c.s.Irrelevant))
		}
		for m := range c.s.Metrics {
			metrics[m] = true
		}
	}
	names := make([]string, 0, len(metrics))
	for m := range metrics {
		names = append(names, m)
	}
	sort.Strings(names)
	sort.SliceStable(names, func(i, j int) bool { return metricOrder(names[i]) < metricOrder(names[j]) })
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	fmt.Fprintln(tw, strings.Join(counts, "\t")+"\t")
	for _, m := range names {
		row := []string{m}
		for _, c := range columns {
			if v, ok := c.s.Metrics[m]; ok {
				row = append(row, fmt.Sprintf("%.3f", v))
			} else {
				row = append(row, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	_ = tw.Flush()
	for _, r := range reports {
		if r.Skipped != "" {
			fmt.Fprintf(w, "%s skipped: %s\n", r.Model, r.Skipped)
		}
		for _, split := range Splits {
			first := true
			for _, m := range r.Misses {
				if m.Split != split {
					continue
				}
				if first {
					if len(reports) > 1 {
						fmt.Fprintf(w, "misses of %s (%s):\n", r.Model, split)
					} else {
						fmt.Fprintf(w, "misses (%s):\n", split)
					}
					first = false
				}
				fmt.Fprintf(w, "  %q\n      want %s\n      got  %s\n", m.Case, printable(m.Want), printable(m.Got))
			}
		}
	}
}

// printable escapes what a terminal would act on rather than show (control characters, line breaks, bidi
// overrides): what came instead is a model's words, and a miss keeps to its lines.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			fmt.Fprintf(&b, "\\u%04x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// metricOrder puts the metrics people read first first; others follow by name.
func metricOrder(m string) string {
	order := []string{MetricRecall1, MetricRecall3, MetricRecall5, MetricMRR, MetricExact, MetricPartial, MetricAsks,
		MetricCallPrecision, MetricCallRecall, MetricOrder, MetricIrrelevance, MetricEveryRun}
	for i, o := range order {
		if o == m {
			return fmt.Sprintf("%02d", i)
		}
	}
	return "99" + m
}
