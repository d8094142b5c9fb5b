package engine

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestReceiptStepsRetryWithoutTheirReceipt: a step that writes the receipt never ends prepared; if it ever
// did, what follows its commit retries the call (a nil result would let River complete the job with no
// receipt).
func TestReceiptStepsRetryWithoutTheirReceipt(t *testing.T) {
	t.Parallel()
	e := &Executor{log: zerolog.Nop()}
	for _, s := range []step{runStep{}, receiptStep{}} {
		p := &pending{result: make(chan error, 1)}
		s.committed(e, p)
		require.ErrorIs(t, <-p.result, errNoReceipt, "%T", s)
	}
}
