package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkAuthUnderTokenFlood measures what failed authentications cost the callers whose tokens are good:
// the latency of an authenticated GET /calls?limit=1, alone ("quiet") and while 16 clients send random
// bearer tokens as fast as the brain answers them ("flood": tens of thousands of random
// tokens). It reports the good caller's p50 and p99 and how many bad tokens were sent and refused 429.
//
//	go test ./brain/cmd/brain -run '^$' -bench AuthUnderTokenFlood -benchtime 2000x
func BenchmarkAuthUnderTokenFlood(b *testing.B) {
	m, err := startBrain(shared.dbURL, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = m.Close(context.Background()) })
	url := m.Server.URL() + "/calls?limit=1"
	for _, flood := range []bool{false, true} {
		name := "quiet"
		if flood {
			name = "flood"
		}
		b.Run(name, func(b *testing.B) {
			ctx, stop := context.WithCancel(context.Background())
			var sent, throttled atomic.Int64
			var wg sync.WaitGroup
			if flood {
				attackers := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				for range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for ctx.Err() == nil {
							var raw [24]byte
							_, _ = rand.Read(raw[:])
							req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
							req.Header.Set("Authorization", "Bearer gem_"+hex.EncodeToString(raw[:]))
							resp, err := attackers.Do(req)
							if err != nil {
								continue
							}
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							sent.Add(1)
							if resp.StatusCode == http.StatusTooManyRequests {
								throttled.Add(1)
							}
						}
					}()
				}
				time.Sleep(time.Second) // the flood is under way before the first measured request
			}
			good := &http.Client{}
			latencies := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				start := time.Now()
				resp, err := good.Do(req)
				require.NoError(b, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				latencies = append(latencies, time.Since(start))
				require.Equal(b, http.StatusOK, resp.StatusCode)
			}
			b.StopTimer()
			stop()
			wg.Wait()
			slices.Sort(latencies)
			ms := func(q float64) float64 {
				return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.5), "p50_ms")
			b.ReportMetric(ms(0.99), "p99_ms")
			b.ReportMetric(float64(sent.Load()), "bad_tokens")
			b.ReportMetric(float64(throttled.Load()), "bad_429")
		})
	}
}
