package engine

import (
	"errors"

	"github.com/gemhq/gem/executor/gemcall"
	"github.com/gemhq/gem/executor/internal/callstate"
)

// stateOf is what call keeps for the engine (set by gemcall, whose init runs before this package's).
var stateOf = callstate.Of.(func(*gemcall.Call) *callstate.State)

// errRetryable reports whether e was made by Retryable.
var errRetryable = callstate.Retryable.(func(*gemcall.Error) bool)

// asError returns the *Error in err, if any.
func asError(err error) (*gemcall.Error, bool) {
	var e *gemcall.Error
	ok := errors.As(err, &e)
	return e, ok
}
