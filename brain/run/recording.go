package run

import (
	"context"
	"slices"
	"sync"

	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// recordings are the runs' answers being recorded after their responses were made: a response goes out
// while its answer commits, so its client does not wait for the database (a lost update only leaves the
// run waiting until GET /brain/runs/{id} derives the answer again).
type recordings struct {
	mu     sync.Mutex
	runs   map[uuid.UUID][]chan struct{} // each recording of the run still under way
	all    sync.WaitGroup
	closed bool // Close was called: answers are recorded before their responses, not alongside
}

// recordAnswer writes a run's answer in the background.
func (s *Service) recordAnswer(ctx context.Context, runID uuid.UUID, args []any) {
	r := &s.recordings
	done := make(chan struct{})
	r.mu.Lock()
	if r.closed {
		// After Close nothing may join the wait: a run still going (an async one, say) records its own
		// answer before it answers, or logs why not.
		r.mu.Unlock()
		s.writeAnswer(ctx, runID, args)
		return
	}
	if r.runs == nil {
		r.runs = map[uuid.UUID][]chan struct{}{}
	}
	r.runs[runID] = append(r.runs[runID], done)
	r.all.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.all.Done()
		s.writeAnswer(ctx, runID, args)
		r.mu.Lock()
		r.runs[runID] = slices.DeleteFunc(r.runs[runID], func(c chan struct{}) bool { return c == done })
		if len(r.runs[runID]) == 0 {
			delete(r.runs, runID)
		}
		r.mu.Unlock()
		close(done)
	}()
}

// writeAnswer writes a run's answer, logging when it could not (GET /brain/runs/{id} derives it again).
func (s *Service) writeAnswer(ctx context.Context, runID uuid.UUID, args []any) {
	log := zerolog.Ctx(ctx)
	err := gemlog.Guarded(log, "recording a run's answer", func() error {
		return postgres.RunUpdateAnswer(context.WithoutCancel(ctx), s.pool, args)
	})
	if err != nil {
		log.Warn().Err(err).Str("run_id", runID.String()).Msg("the run's answer was not recorded; GET /brain/runs/{id} derives it again")
	}
}

// Recorded waits until the answers of the run that were being recorded when it was called are recorded (or
// failed, which the service logs), or ctx ends. A run's response may go out before its answer is recorded:
// a caller that goes on to read the run, or to answer with what the database says, waits here first.
func (s *Service) Recorded(ctx context.Context, runID uuid.UUID) {
	s.recordings.mu.Lock()
	pending := append([]chan struct{}(nil), s.recordings.runs[runID]...)
	s.recordings.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

// Close waits for every answer being recorded alongside its response; each ends with its one statement,
// or with the database's error. From then on answers are recorded before their responses go out. Call it
// before the pool closes.
func (s *Service) Close() {
	s.recordings.mu.Lock()
	s.recordings.closed = true
	s.recordings.mu.Unlock()
	s.recordings.all.Wait()
}
