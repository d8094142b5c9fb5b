package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// StudioSession is a login to the studio: the caller it acts as and the CSRF token its forms send.
type StudioSession struct {
	Caller    string
	CSRFToken string
	ExpiresAt time.Time
}

// RandomToken is 32 random bytes, URL-safe base64: session ids and CSRF tokens.
func RandomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return base64.RawURLEncoding.EncodeToString(b)
}

// StudioSessionCreate starts a session for the caller that lasts ttl, and returns the id the cookie holds.
// Expired sessions are removed on the way.
func StudioSessionCreate(ctx context.Context, db gemsql.DBTX, caller string, ttl time.Duration) (string, *StudioSession, error) {
	id := RandomToken()
	sum := sha256.Sum256([]byte(id))
	s := &StudioSession{Caller: caller, CSRFToken: RandomToken()}
	if _, err := db.Exec(ctx, `DELETE FROM brain_studio_sessions WHERE expires_at < now()`); err != nil {
		return "", nil, fmt.Errorf("error removing expired studio sessions: %w", coded(err))
	}
	err := db.QueryRow(ctx, `INSERT INTO brain_studio_sessions (id_sha256, caller, csrf_token, expires_at)
		VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') RETURNING expires_at`,
		sum[:], caller, s.CSRFToken, ttl.Milliseconds()).Scan(&s.ExpiresAt)
	if err != nil {
		return "", nil, fmt.Errorf("error creating studio session: %w", coded(err))
	}
	return id, s, nil
}

// StudioSessionGet returns the live session a cookie's id names, or ENOTFOUND (unknown or expired).
func StudioSessionGet(ctx context.Context, db gemsql.DBTX, id string) (*StudioSession, error) {
	sum := sha256.Sum256([]byte(id))
	var s StudioSession
	err := db.QueryRow(ctx, `SELECT caller, csrf_token, expires_at FROM brain_studio_sessions
		WHERE id_sha256 = $1 AND expires_at > now()`, sum[:]).Scan(&s.Caller, &s.CSRFToken, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no such studio session")
	}
	if err != nil {
		return nil, coded(err)
	}
	return &s, nil
}

// StudioSessionDelete ends a session (logout); an unknown id is not an error.
func StudioSessionDelete(ctx context.Context, db gemsql.DBTX, id string) error {
	sum := sha256.Sum256([]byte(id))
	_, err := db.Exec(ctx, `DELETE FROM brain_studio_sessions WHERE id_sha256 = $1`, sum[:])
	return coded(err)
}

// RunSummary is a run as a listing shows it.
type RunSummary struct {
	ID          uuid.UUID  `json:"id"`
	Message     string     `json:"message"`
	Mode        string     `json:"mode"`
	Status      string     `json:"status"`
	Agent       string     `json:"agent,omitempty"`
	RequestedBy string     `json:"requested_by,omitempty"`
	ApprovedBy  string     `json:"approved_by,omitempty"`
	Calls       int        `json:"calls"`
	CreatedAt   time.Time  `json:"created_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// RunFilter narrows a listing of runs: each field set must match (a run's status, mode, agent and the caller
// who made it).
type RunFilter struct {
	Status, Mode, Agent, Caller string
	// Limit bounds the listing (1 to RunListMax).
	Limit int
}

// RunListMax is the most runs one listing returns.
const RunListMax = 500

// RunList returns the newest runs the reader may read (brain.Reader) that match f, at most f.Limit.
func RunList(ctx context.Context, db gemsql.DBTX, f RunFilter, reader brain.Reader) ([]RunSummary, error) {
	limit := min(max(f.Limit, 1), RunListMax)
	rows, err := db.Query(ctx, `SELECT id, left(message, 300), mode, status, coalesce(agent, ''), coalesce(requested_by, ''),
			coalesce(approved_by, ''), cardinality(call_ids), created_at, completed_at
		FROM brain_runs WHERE ($1 = '' OR status = $1) AND ($5 = '' OR mode = $5) AND ($6 = '' OR agent = $6)
		  AND ($7 = '' OR requested_by = $7)
		  AND ($3 = '' OR requested_by = $3 OR approved_by = $3 OR ($4 AND status = 'planned'))
		ORDER BY created_at DESC LIMIT $2`, f.Status, limit, reader.Viewer(), reader.Approver, f.Mode, f.Agent, f.Caller)
	if err != nil {
		return nil, coded(err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RunSummary, error) {
		var r RunSummary
		err := row.Scan(&r.ID, &r.Message, &r.Mode, &r.Status, &r.Agent, &r.RequestedBy, &r.ApprovedBy, &r.Calls, &r.CreatedAt, &r.CompletedAt)
		return r, err
	})
	if err != nil {
		return nil, coded(err)
	}
	return runs, nil
}
