package main

import (
	"slices"
	"time"
)

// summary describes a set of latencies.
type summary struct {
	N                  int
	P50, P95, P99, Max time.Duration
}

// summarize computes nearest-rank percentiles.
func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return summary{N: len(s), P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: s[len(s)-1]}
}

// medianOf is the median of values (the middle one of an odd count, the mean of the two middle ones else).
func medianOf[T ~int64 | ~float64](values []T) T {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
