// Package evals measures how well GEM's tools are chosen: suites of cases kept as data in the repository
// (evals/*.yaml), run against this build's tool search, rules planner or chat loop, scored per split, and held
// to floors (evals/thresholds.yaml). docs/evals.md is the design and the guide.
package evals

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"
)

// The splits a case belongs to.
const (
	// SplitTune cases may be tuned on: synonyms, descriptions, rules and the ranking may change because one fails.
	SplitTune = "tune"
	// SplitHeldOut cases never are: a change made because one failed moves it to tune, and a new one is written.
	SplitHeldOut = "held_out"
)

// Splits are the splits, in the order reports show them.
var Splits = []string{SplitTune, SplitHeldOut}

// Report is one suite's result: its metrics per split, and every miss.
type Report struct {
	// Suite is the suite's name: search, plan or chat.
	Suite string `json:"suite"`
	// Model is the model the chat suite asked; "" for the other suites.
	Model string `json:"model,omitempty"`
	// Runs is how many times the chat suite held each case (brain eval -runs); 0 for the other suites.
	Runs int `json:"runs,omitempty"`
	// Skipped says why a suite was not run (the chat suite without a model); it then has no splits.
	Skipped string `json:"skipped,omitempty"`
	// Splits holds the metrics of each split that has cases, in Splits order.
	Splits []SplitReport `json:"splits"`
	// Misses are the cases that failed, in file order, each with what came instead.
	Misses []Miss `json:"misses"`
}

// SplitReport is a suite's metrics over one split.
type SplitReport struct {
	Split string `json:"split"`
	// Cases is how many cases the split has; Relevant how many expect a tool or call, Asks how many expect a
	// question back (plan suite), Irrelevant how many expect none.
	Cases      int `json:"cases"`
	Relevant   int `json:"relevant"`
	Asks       int `json:"asks,omitempty"`
	Irrelevant int `json:"irrelevant"`
	// Metrics are the suite's measures, each from 0 to 1 (docs/evals.md names them).
	Metrics map[string]float64 `json:"metrics"`
}

// Miss is a case that failed: what it wanted, and what came instead.
type Miss struct {
	Split string `json:"split"`
	// Case is the case's text: the query or the message.
	Case string `json:"case"`
	// Want says what was expected; Got what came instead.
	Want string `json:"want"`
	Got  string `json:"got"`
}

// Metric returns a split's metric and whether the report has it.
func (r *Report) Metric(split, metric string) (float64, bool) {
	for _, s := range r.Splits {
		if s.Split == split {
			v, ok := s.Metrics[metric]
			return v, ok
		}
	}
	return 0, false
}

// FileMax is the most bytes a file of evals (a suite, the thresholds, a draft) may have: some hundred times
// the search suite's.
const FileMax = 8 << 20

// ReadFile reads a file of evals, refusing one larger than FileMax: decoding YAML takes some twenty times a
// file's size in memory, and a path such as a device may never end.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, FileMax+1))
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", path, err)
	}
	if len(data) > FileMax {
		return nil, fmt.Errorf("%s is more than the %d MiB a file of evals may have", path, FileMax>>20)
	}
	return data, nil
}

// decodeStrict reads YAML into v, refusing fields v does not have (a misspelt key would otherwise be ignored and
// a case would silently test less than it says) and a second document.
func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	// A second document ("---") would be left unread: its cases silently untested.
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return errors.New("the file holds more than one YAML document (---): keep to one")
	}
	return nil
}

// readSuite reads a suite file from dir: an error names the file.
func readSuite(dir, suite string, v any) error {
	path := filepath.Join(dir, suite+".yaml")
	data, err := ReadFile(path)
	if err != nil {
		return err
	}
	if err := decodeStrict(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func checkSplit(split string) error {
	if !slices.Contains(Splits, split) {
		return fmt.Errorf("split %q is not one of %v", split, Splits)
	}
	return nil
}

// Thresholds are the floors a report must meet: suite → split → metric → floor.
type Thresholds map[string]map[string]map[string]float64

// LoadThresholds reads a thresholds file (evals/thresholds.yaml).
func LoadThresholds(path string) (Thresholds, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Thresholds
	if err := decodeStrict(data, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for suite, splits := range t {
		for split, metrics := range splits {
			if err := checkSplit(split); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", path, suite, err)
			}
			for metric, floor := range metrics {
				if !(floor >= 0 && floor <= 1) { // NaN too: no value is below it, so it would hold nothing
					return nil, fmt.Errorf("%s: %s %s %s: a floor is from 0 to 1, not %v", path, suite, split, metric, floor)
				}
			}
		}
	}
	return t, nil
}

// Split returns the floors of one split only, for a report of that split.
func (t Thresholds) Split(split string) Thresholds {
	only := Thresholds{}
	for suite, splits := range t {
		only[suite] = map[string]map[string]float64{}
		if metrics, ok := splits[split]; ok {
			only[suite][split] = metrics
		}
	}
	return only
}

// Check returns each floor the report is below, as a sentence naming the suite, split, metric, value and floor,
// in a stable order; and each floor of a split or a metric the report lacks (a misspelt metric, or a split
// whose cases all moved to the other, must not pass). Keep to the splits scored (Split) first.
func (t Thresholds) Check(r *Report) []string {
	var failed []string
	splits := t[r.Suite]
	name := r.Suite
	if r.Model != "" {
		name += " (" + r.Model + ")"
	}
	for _, split := range Splits {
		metrics := splits[split]
		if len(metrics) > 0 && !slices.ContainsFunc(r.Splits, func(s SplitReport) bool { return s.Split == split }) {
			failed = append(failed, fmt.Sprintf("%s %s: no case of this split (a floor must name a split the suite has)", r.Suite, split))
			continue
		}
		names := make([]string, 0, len(metrics))
		for m := range metrics {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			floor := metrics[m]
			v, ok := r.Metric(split, m)
			switch {
			case !ok:
				failed = append(failed, fmt.Sprintf("%s %s: no metric %q (a floor must name a metric the suite reports)", name, split, m))
			case v < floor:
				failed = append(failed, fmt.Sprintf("%s %s %s is %.4f, below its floor %.4g", name, split, m, v, floor))
			}
		}
	}
	return failed
}
