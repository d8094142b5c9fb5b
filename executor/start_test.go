package executor_test

import (
	"context"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A Start that fails leaves nothing running: the pools New opened (River's and the calls') are closed with
// it, so a caller that gives up or builds another executor holds no connections and no pool goroutines.
// Not parallel: it counts the process's goroutines.
func TestFailedStartClosesItsPools(t *testing.T) {
	_, b := setup(t)
	before := goleak.IgnoreCurrent()
	e, err := executor.New(executor.Config{DatabaseURL: b.url, ID: "test-" + uuid.NewString()[:8]}, b.reg, executor.Handlers{}, b.pool, zerolog.Nop())
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, e.Start(cancelled), context.Canceled)
	goleak.VerifyNone(t, before)
}
