package evals

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// SearchSuite is the search suite's name and file (evals/search.yaml).
const SearchSuite = "search"

// SearchCase is a request as people phrase it and the tools that serve it; any of them is a hit. No tools means
// no tool serves the request: the search should say no tool fits.
type SearchCase struct {
	Q     string
	Tools []string
	Split string
}

// searchCaseFile is a case as written: tools must be given, [] when none serves.
type searchCaseFile struct {
	Q     string    `yaml:"q"`
	Tools *[]string `yaml:"tools"`
	Split string    `yaml:"split"`
	// From says where a case drafted from receipts came from; kept for the person reading the file.
	From map[string]any `yaml:"from"`
}

// LoadSearch reads dir/search.yaml. Every case needs its query, its tools (each known to known, so a renamed
// tool fails here, not silently) and its split; a query may appear once.
func LoadSearch(dir string, known func(tool string) bool) ([]SearchCase, error) {
	var file []searchCaseFile
	if err := readSuite(dir, SearchSuite, &file); err != nil {
		return nil, err
	}
	var problems []string
	seen := map[string]int{}
	cases := make([]SearchCase, 0, len(file))
	for i, c := range file {
		at := fmt.Sprintf("case %d (%q)", i+1, c.Q)
		q := strings.TrimSpace(c.Q)
		switch {
		case q == "":
			problems = append(problems, fmt.Sprintf("case %d: q is empty", i+1))
		case seen[strings.ToLower(q)] > 0:
			problems = append(problems, fmt.Sprintf("%s: the same query as case %d", at, seen[strings.ToLower(q)]))
		}
		seen[strings.ToLower(q)] = i + 1
		if c.Tools == nil {
			problems = append(problems, at+": tools is missing (tools: [] when no tool serves the request)")
		}
		if err := checkSplit(c.Split); err != nil {
			problems = append(problems, at+": "+err.Error())
		}
		var tools []string
		if c.Tools != nil {
			tools = *c.Tools
		}
		for _, t := range tools {
			if !known(t) {
				problems = append(problems, fmt.Sprintf("%s: unknown tool %q", at, t))
			}
		}
		cases = append(cases, SearchCase{Q: q, Tools: tools, Split: c.Split})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s.yaml: %s", SearchSuite, strings.Join(problems, "; "))
	}
	return cases, nil
}

// SearchHit is a tool a search found.
type SearchHit struct {
	Tool  string  `json:"tool"`
	Score float64 `json:"score"`
	// Coverage is the share of the query the tool's document holds, from 0 to 1.
	Coverage float64 `json:"coverage"`
}

// SearchResult is what a search answered: the tools, best first, and whether any fits the request.
type SearchResult struct {
	Hits []SearchHit
	Fits bool
}

// Searcher searches tools for a query, as the brain does (postgres.ToolSearch).
type Searcher func(ctx context.Context, query string, limit int) (SearchResult, error)

// searchDepth is how many tools each search returns: MRR counts a tool found up to 10th.
const searchDepth = 10

// The search suite's metrics.
const (
	MetricRecall1     = "recall_at_1"
	MetricRecall3     = "recall_at_3"
	MetricRecall5     = "recall_at_5"
	MetricMRR         = "mrr"
	MetricIrrelevance = "irrelevance"
)

// RunSearch runs every case through search and scores each split: Recall@1, @3 and @5 (a tool of the case among
// the first k the search offers) and MRR over the cases with tools, irrelevance accuracy (the search said no
// tool fits) over those without. A search that says no tool fits offers none, so a case with tools counts it as
// a miss. A miss is a case whose tool is not in the first 3, or a case without tools for which a tool fit.
func RunSearch(ctx context.Context, cases []SearchCase, search Searcher) (*Report, error) {
	type tally struct {
		cases, relevant, irrelevant, at1, at3, at5, rejected int
		rr                                                   float64
	}
	tallies := map[string]*tally{}
	report := &Report{Suite: SearchSuite, Misses: []Miss{}}
	for _, c := range cases {
		res, err := search(ctx, c.Q, searchDepth)
		if err != nil {
			return nil, fmt.Errorf("searching %q: %w", c.Q, err)
		}
		t := tallies[c.Split]
		if t == nil {
			t = &tally{}
			tallies[c.Split] = t
		}
		t.cases++
		if len(c.Tools) == 0 {
			t.irrelevant++
			if !res.Fits {
				t.rejected++
			} else {
				report.Misses = append(report.Misses, Miss{Split: c.Split, Case: c.Q, Want: "no tool fits", Got: describeHits(res, 3)})
			}
			continue
		}
		t.relevant++
		rank := 0
		if res.Fits {
			for i, h := range res.Hits {
				if slices.Contains(c.Tools, h.Tool) {
					rank = i + 1
					break
				}
			}
		}
		if rank > 0 {
			t.rr += 1 / float64(rank)
		}
		if rank > 0 {
			t.at1 += b2i(rank <= 1)
			t.at3 += b2i(rank <= 3)
			t.at5 += b2i(rank <= 5)
		}
		if rank == 0 || rank > 3 {
			got := describeHits(res, 3)
			if rank > 3 {
				got += fmt.Sprintf("; the wanted tool came %s", ordinal(rank))
			}
			report.Misses = append(report.Misses, Miss{Split: c.Split, Case: c.Q, Want: strings.Join(c.Tools, " or "), Got: got})
		}
	}
	for _, split := range Splits {
		t := tallies[split]
		if t == nil {
			continue
		}
		m := map[string]float64{}
		if t.relevant > 0 {
			n := float64(t.relevant)
			m[MetricRecall1], m[MetricRecall3], m[MetricRecall5] = float64(t.at1)/n, float64(t.at3)/n, float64(t.at5)/n
			m[MetricMRR] = t.rr / n
		}
		if t.irrelevant > 0 {
			m[MetricIrrelevance] = float64(t.rejected) / float64(t.irrelevant)
		}
		report.Splits = append(report.Splits, SplitReport{Split: split, Cases: t.cases, Relevant: t.relevant, Irrelevant: t.irrelevant, Metrics: m})
	}
	return report, nil
}

// describeHits says what a search offered: its first n tools with their score and coverage, or that no tool fit
// (with the best tool it set aside, so a person sees how close it came).
func describeHits(res SearchResult, n int) string {
	if len(res.Hits) == 0 {
		return "no tool at all"
	}
	var parts []string
	for _, h := range res.Hits[:min(n, len(res.Hits))] {
		parts = append(parts, fmt.Sprintf("%s (score %.2f, coverage %.2f)", h.Tool, h.Score, h.Coverage))
	}
	if !res.Fits {
		return "no tool fits; best was " + parts[0]
	}
	return strings.Join(parts, ", ")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
