package evals

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText prints a report for a person: a table of the metrics per split, then every miss with what came
// instead, in file order, so two runs diff.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s suite\n", r.Suite)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{""}
	counts := []string{"cases"}
	metrics := map[string]bool{}
	for _, s := range r.Splits {
		header = append(header, s.Split)
		if s.Asks > 0 {
			counts = append(counts, fmt.Sprintf("%d (%d + %d asks + %d none)", s.Cases, s.Relevant, s.Asks, s.Irrelevant))
		} else {
			counts = append(counts, fmt.Sprintf("%d (%d + %d none)", s.Cases, s.Relevant, s.Irrelevant))
		}
		for m := range s.Metrics {
			metrics[m] = true
		}
	}
	names := make([]string, 0, len(metrics))
	for m := range metrics {
		names = append(names, m)
	}
	sort.SliceStable(names, func(i, j int) bool { return metricOrder(names[i]) < metricOrder(names[j]) })
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	fmt.Fprintln(tw, strings.Join(counts, "\t")+"\t")
	for _, m := range names {
		row := []string{m}
		for _, s := range r.Splits {
			if v, ok := s.Metrics[m]; ok {
				row = append(row, fmt.Sprintf("%.3f", v))
			} else {
				row = append(row, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	_ = tw.Flush()
	for _, split := range Splits {
		first := true
		for _, m := range r.Misses {
			if m.Split != split {
				continue
			}
			if first {
				fmt.Fprintf(w, "misses (%s):\n", split)
				first = false
			}
			fmt.Fprintf(w, "  %q\n      want %s\n      got  %s\n", m.Case, m.Want, m.Got)
		}
	}
}

// metricOrder puts the metrics people read first first; others follow by name.
func metricOrder(m string) string {
	order := []string{MetricRecall1, MetricRecall3, MetricRecall5, MetricMRR, MetricExact, MetricPartial, MetricAsks, MetricIrrelevance}
	for i, o := range order {
		if o == m {
			return fmt.Sprintf("%02d", i)
		}
	}
	return "99" + m
}
