package gemlog

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// PanicError is a panic recovered by Guarded: what was thrown, and the stack of the goroutine that threw it.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Guarded runs fn and turns a panic in it into an error (a *PanicError), logged at error level on log (with
// its fields: a request's id, a device's name) with what was being done and the stack. Every goroutine the
// brain and the executor start for a request, a session or a loop's turn runs its work through it, so that
// no bug ends the process: the request is answered with an error, the session ends, the loop goes on.
// http.ErrAbortHandler, net/http's way to abort a response, is thrown on.
func Guarded(log *zerolog.Logger, what string, fn func() error) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			panic(p)
		}
		pe := &PanicError{Value: p, Stack: debug.Stack()}
		log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", pe.Stack).Msg(what + " panicked; recovered")
		err = pe
	}()
	return fn()
}
