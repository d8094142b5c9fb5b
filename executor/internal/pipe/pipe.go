// Package pipe is the connection a batch of calls runs on, between BEGIN and COMMIT: the executor's own
// statements held back to travel with the next one sent (Pipe), and the handler's guarded view of it
// (Guarded), which an abandoned handler loses.
package pipe

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pipe is the connection of a batch's transaction with statements held back to travel with the next one
// sent. The executor's own bookkeeping between two handlers (the previous call's savepoint release, the
// next call's savepoint) goes out with the next handler's first statement, so a call in a batch costs the
// round trips of its handler's statements and nothing more.
//
// A held-back statement that fails breaks the transaction: the pipe reports it as a TxBrokenError to
// whoever sent the statement it travelled with, and every later send fails the same way.
//
// pgx prepares a batch's new statements before running any of it, and a statement that fails to prepare
// (a handler's SQL with a typo) aborts the transaction before the held statements ran: the previous call's
// savepoint would be unreleased and the current call's not yet made. So a statement the connection has not
// run before goes out alone, after the held ones (once per connection and statement; see knownStatements).
type Pipe struct {
	conn   *pgx.Conn
	held   []heldStmt
	broken error
}

// heldStmt is a statement waiting for the next send. scan reads its one row; nil means it returns none.
type heldStmt struct {
	sql  string
	args []any
	scan func(pgx.Row) error
}

// New makes the pipe of a transaction on conn.
func New(conn *pgx.Conn) *Pipe { return &Pipe{conn: conn} }

// knownStatementsKey is where a connection keeps the statements it has prepared (PgConn.CustomData).
const knownStatementsKey = "gem.known_statements"

// knownStatementsMax bounds the set: a handler that builds SQL text on the fly would grow it without end.
// Clearing it costs one extra round trip per statement the next time each is sent.
const knownStatementsMax = 1024

// knownStatements is the set of statements this connection has prepared and run: pgx has them in its
// statement cache, so a batch that ends with one sends no Parse that could fail before the held statements
// ran. (pgx may evict one from its cache; preparing it again then parses what parsed before.)
func (p *Pipe) knownStatements() map[string]struct{} {
	data := p.conn.PgConn().CustomData()
	known, _ := data[knownStatementsKey].(map[string]struct{})
	if known == nil || len(known) > knownStatementsMax {
		known = make(map[string]struct{})
		data[knownStatementsKey] = known
	}
	return known
}

func (p *Pipe) known(sql string) bool {
	_, ok := p.knownStatements()[sql]
	return ok
}

// markKnown records that sql was prepared and ran on this connection.
func (p *Pipe) markKnown(sql string) { p.knownStatements()[sql] = struct{}{} }

// Hold queues a statement that returns no row.
func (p *Pipe) Hold(sql string, args ...any) {
	p.held = append(p.held, heldStmt{sql: sql, args: args})
}

// HoldRow queues a statement whose one row is read with scan when it has run.
func (p *Pipe) HoldRow(scan func(pgx.Row) error, sql string, args ...any) {
	p.held = append(p.held, heldStmt{sql: sql, args: args, scan: scan})
}

// HoldsRows reports whether a held statement has a row to read.
func (p *Pipe) HoldsRows() bool {
	for _, h := range p.held {
		if h.scan != nil {
			return true
		}
	}
	return false
}

// Flush sends the held statements now.
func (p *Pipe) Flush(ctx context.Context) error {
	if p.broken != nil {
		return p.broken
	}
	if len(p.held) == 0 {
		return nil
	}
	br, err := p.send(ctx, nil)
	if err != nil {
		return err
	}
	if err := br.Close(); err != nil {
		return p.Break(fmt.Errorf("error sending held statements: %w", err))
	}
	return nil
}

// send sends the held statements followed by extra's, and returns the results positioned at extra's first.
func (p *Pipe) send(ctx context.Context, extra []*pgx.QueuedQuery) (pgx.BatchResults, error) {
	if p.broken != nil {
		return nil, p.broken
	}
	if len(extra) > 1 || len(extra) == 1 && !p.known(extra[0].SQL) {
		// It goes out alone, after the held statements; the caller marks it known once it ran.
		if err := p.Flush(ctx); err != nil {
			return nil, err
		}
		return p.conn.SendBatch(ctx, &pgx.Batch{QueuedQueries: extra}), nil
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(p.held)+1)}
	for _, h := range p.held {
		b.Queue(h.sql, h.args...)
	}
	b.QueuedQueries = append(b.QueuedQueries, extra...)
	held := p.held
	p.held = nil
	br := p.conn.SendBatch(ctx, b)
	for _, h := range held {
		var err error
		if h.scan != nil {
			err = h.scan(br.QueryRow())
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return nil, p.Break(fmt.Errorf("error in %s: %w", statementName(h.sql), err))
		}
	}
	return br, nil
}

// Break marks the transaction broken by err (the first cause is kept) and returns the TxBrokenError every
// later send returns.
func (p *Pipe) Break(err error) error {
	if p.broken == nil {
		p.broken = TxBrokenError{Err: err}
	}
	return p.broken
}

// statementName is the start of a statement, for error messages.
func statementName(sql string) string {
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 40 {
		sql = sql[:40] + "…"
	}
	return fmt.Sprintf("%q", sql)
}

// Holding reports whether statements are held back, waiting for the next send.
func (p *Pipe) Holding() bool { return len(p.held) > 0 }

// Conn is the connection a batch runs on, between BEGIN and COMMIT: a Pipe, or what a handler's Guarded
// view wraps.
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Conn() *pgx.Conn
}

// TxBrokenError marks a failure after which the transaction must not be used.
type TxBrokenError struct{ Err error }

func (e TxBrokenError) Error() string { return e.Err.Error() }

// Unwrap gives its cause: a transaction broken by the database going away is retried without spending an
// attempt.
func (e TxBrokenError) Unwrap() error { return e.Err }

// Exec, Query, QueryRow and SendBatch make the pipe the Conn the handler's Guarded view and the executor's
// own statements use: each carries the held statements with it.

func (p *Pipe) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if len(p.held) == 0 && p.broken == nil {
		tag, err := p.conn.Exec(ctx, sql, args...)
		if err == nil {
			p.markKnown(sql)
		}
		return tag, err
	}
	br, err := p.send(ctx, []*pgx.QueuedQuery{{SQL: sql, Arguments: args}})
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		p.markKnown(sql)
	}
	return tag, err
}

func (p *Pipe) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if len(p.held) == 0 && p.broken == nil {
		rows, err := p.conn.Query(ctx, sql, args...)
		if err != nil {
			return rows, err
		}
		return &finishRows{Rows: rows, finish: func(rowsErr error) error {
			if rowsErr == nil {
				p.markKnown(sql)
			}
			return nil
		}}, nil
	}
	br, err := p.send(ctx, []*pgx.QueuedQuery{{SQL: sql, Arguments: args}})
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	// Closing the batch readies the connection for the next statement.
	return &finishRows{Rows: rows, finish: func(rowsErr error) error {
		err := br.Close()
		if rowsErr == nil && err == nil {
			p.markKnown(sql)
		}
		return err
	}}, nil
}

func (p *Pipe) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return rowOf(p.Query(ctx, sql, args...))
}

func (p *Pipe) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if len(p.held) == 0 && p.broken == nil {
		return p.conn.SendBatch(ctx, b)
	}
	// The results continue with b's first statement; Close runs b's callbacks as pgx does.
	br, err := p.send(ctx, b.QueuedQueries)
	if err != nil {
		return errBatch{err: err}
	}
	return br
}

// Conn is the pipe's connection, for what must go out alone (a rollback in an aborted transaction).
func (p *Pipe) Conn() *pgx.Conn { return p.conn }

// finishRows runs finish once, when its rows have been read or closed: pgx closes Rows by itself when Next
// returns false, so a caller may never call Close. finish gets the rows' error and returns one to report
// from Err.
type finishRows struct {
	pgx.Rows
	finish func(rowsErr error) error
	done   bool
	err    error
}

func (r *finishRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.end()
	return false
}

func (r *finishRows) Close() {
	r.Rows.Close()
	r.end()
}

func (r *finishRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *finishRows) end() {
	if !r.done {
		r.done = true
		r.err = r.finish(r.Rows.Err())
	}
}

// rowOf is what QueryRow returns for a Query's result: its first row, or its error.
func rowOf(rows pgx.Rows, err error) pgx.Row {
	if err != nil {
		return errRow{err: err}
	}
	return firstRow{rows: rows}
}

// firstRow scans the first row like pgx's QueryRow: pgx.ErrNoRows when there is none.
type firstRow struct{ rows pgx.Rows }

func (r firstRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
