package gemsql

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// DatabaseAway says whether err means the database is away: the connection to it was refused or lost, or
// the server answered that it is starting, stopping, restarting or out of connections or resources. It is
// GEM's one list of such errors, and waiting, not another request, is what fixes them:
//
//   - the storage returns them coded EUNAVAILABLE (Coded), which the brain answers 503 with a Retry-After;
//   - the executor gives back the call they interrupted without spending one of its attempts;
//   - processes starting wait for the database through them (NewPool's ConnectWait).
//
// By SQLSTATE: connection exceptions (class 08, but a protocol violation, 08P01, is a bug), insufficient
// resources (53: too many connections, out of memory or disk), operator intervention (57: shutdown, crash
// shutdown, cannot connect now, idle session timeout; not 57014, a statement cancelled, which is the
// caller's deadline) and system errors (58: I/O). Without one: a failed connection attempt, a socket error
// or end of file, and a connection the driver has closed. The caller's own cancellation or deadline is not
// the database being away.
func DatabaseAway(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch class := pgErr.Code[:min(2, len(pgErr.Code))]; class {
		case "08":
			return pgErr.Code != "08P01"
		case "53", "58":
			return true
		case "57":
			return pgErr.Code != "57014"
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed)
}
