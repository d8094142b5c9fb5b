package gemsql

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Caller kinds (core_callers.kind).
const (
	CallerToken   = "token"   // a bearer token of the brain's (API, CLI, MCP over HTTP)
	CallerSQL     = "sql"     // a database role, named "sql:<role>"
	CallerService = "service" // a part of GEM that calls on its own authority (the HighLevel webhook)
)

// CallerNameRe is the rule for callers' names (core_callers.name).
var CallerNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$`)

// Caller is a row of core_callers without its token: who may make calls, and what it may do
// (docs/governance.md).
type Caller struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Permissions are patterns: "*", "send:*", "read:db".
	Permissions []string `json:"permissions"`
	// Agents, when not nil, are the only agents the caller may act as.
	Agents []string `json:"agents"`
	// HasToken says a token made by CallerCreate authenticates it (tokens from the brain's configuration
	// are not stored).
	HasToken  bool       `json:"has_token"`
	Note      string     `json:"note"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Revoked reports whether the caller was revoked.
func (c *Caller) Revoked() bool { return c.RevokedAt != nil }

const callerColumns = `name, kind, permissions, agents, token_sha256 IS NOT NULL, note, created_at, updated_at, revoked_at`

func scanCaller(row pgx.Row) (*Caller, error) {
	var c Caller
	err := row.Scan(&c.Name, &c.Kind, &c.Permissions, &c.Agents, &c.HasToken, &c.Note, &c.CreatedAt, &c.UpdatedAt, &c.RevokedAt)
	return &c, err
}

// CallerList returns every caller, by name.
func CallerList(ctx context.Context, db DBTX) ([]*Caller, error) {
	rows, err := db.Query(ctx, `SELECT `+callerColumns+` FROM core_callers ORDER BY name`)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing callers: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Caller, error) { return scanCaller(row) })
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing callers: %w", err))
	}
	return list, nil
}

// CallerGet returns one caller, or ErrNotFound.
func CallerGet(ctx context.Context, db DBTX, name string) (*Caller, error) {
	c, err := scanCaller(db.QueryRow(ctx, `SELECT `+callerColumns+` FROM core_callers WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading caller %s: %w", name, err))
	}
	return c, nil
}

// CallerByToken returns the caller a token made by CallerCreate authenticates, or ErrNotFound.
func CallerByToken(ctx context.Context, db DBTX, token string) (*Caller, error) {
	c, err := scanCaller(db.QueryRow(ctx, `SELECT `+callerColumns+` FROM core_callers WHERE token_sha256 = $1`, TokenHash(token)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading a caller by token: %w", err))
	}
	return c, nil
}

// CallerParams are a caller's settings.
type CallerParams struct {
	Name        string
	Permissions []string
	// Agents, when not nil, are the only agents the caller may act as.
	Agents []string
	Note   string
}

// CallerCreate makes a caller. A token caller gets a new token, returned and stored only as its SHA-256; an
// SQL caller ("sql:<role>") gets none, since its role logs in to PostgreSQL. A caller that exists is
// ErrExists; one whose name differs from an existing caller's only in case is a *NameClashError.
func CallerCreate(ctx context.Context, db DBTX, p CallerParams) (*Caller, string, error) {
	kind, token := CallerSQL, ""
	var hash []byte
	if !strings.HasPrefix(p.Name, "sql:") {
		kind, token = CallerToken, newToken("gem_")
		hash = TokenHash(token)
	}
	// One statement: the insert happens only when no caller has the name in any case.
	c, err := scanCaller(db.QueryRow(ctx, `WITH clash AS (SELECT name FROM core_callers WHERE lower(name) = lower($1) LIMIT 1),
		made AS (INSERT INTO core_callers (name, kind, permissions, agents, token_sha256, note)
			SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM clash) RETURNING `+callerColumns+`)
		SELECT * FROM made
		UNION ALL SELECT name, '', '{}', NULL, false, '', now(), now(), NULL FROM clash`,
		p.Name, kind, nonNil(p.Permissions), p.Agents, hash, p.Note))
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505", err == nil && c.Name == p.Name && c.Kind == "":
		return nil, "", ErrExists
	case err == nil && c.Kind == "":
		return nil, "", &NameClashError{Name: p.Name, Existing: c.Name}
	case err != nil:
		return nil, "", Coded(fmt.Errorf("error creating caller %s: %w", p.Name, err))
	}
	return c, token, nil
}

// NameClashError refuses a caller whose name differs from an existing caller's only in case: logs, receipts
// and people read them as one.
type NameClashError struct {
	Name, Existing string
}

func (e *NameClashError) Error() string {
	return fmt.Sprintf("caller %q differs only in case from the existing caller %q", e.Name, e.Existing)
}

// CallerUpdate changes a caller's permissions, agents (nil: any agent) and note. A revoked caller stays
// revoked (CallerEnable brings it back with a new token). A caller that does not exist is ErrNotFound.
func CallerUpdate(ctx context.Context, db DBTX, p CallerParams) (*Caller, error) {
	c, err := scanCaller(db.QueryRow(ctx, `UPDATE core_callers SET permissions = $2, agents = $3, note = $4, updated_at = now()
		WHERE name = $1 RETURNING `+callerColumns, p.Name, nonNil(p.Permissions), p.Agents, p.Note))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error updating caller %s: %w", p.Name, err))
	}
	return c, nil
}

// CallerRevoke revokes a caller: its token stops working and the executor refuses its calls, those queued
// too. The row stays, as its calls name it. A caller that does not exist is ErrNotFound.
func CallerRevoke(ctx context.Context, db DBTX, name string) error {
	tag, err := db.Exec(ctx, `UPDATE core_callers SET revoked_at = coalesce(revoked_at, now()), updated_at = now() WHERE name = $1`, name)
	if err != nil {
		return Coded(fmt.Errorf("error revoking caller %s: %w", name, err))
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// CallerRotateToken gives a token caller a new token; the old one stops working at once. A caller that does
// not exist, or is an SQL caller, is ErrNotFound.
func CallerRotateToken(ctx context.Context, db DBTX, name string) (string, error) {
	token := newToken("gem_")
	tag, err := db.Exec(ctx, `UPDATE core_callers SET token_sha256 = $2, updated_at = now() WHERE name = $1 AND kind = 'token'`,
		name, TokenHash(token))
	if err != nil {
		return "", Coded(fmt.Errorf("error rotating the token of caller %s: %w", name, err))
	}
	if tag.RowsAffected() == 0 {
		return "", ErrNotFound
	}
	return token, nil
}

// ErrNotRevoked refuses to enable a caller that is not revoked.
var ErrNotRevoked = errors.New("the caller is not revoked")

// ErrConfiguredToken refuses to give a stored token to a caller whose token is in the brain's configuration.
var ErrConfiguredToken = errors.New("the caller's token is in the brain's configuration (GEM_BRAIN_TOKENS)")

// CallerEnable lifts a caller's revocation. A token caller gets a new token in the same statement (returned,
// stored as its SHA-256), so the token it had — revoked, perhaps because it leaked — never authenticates
// again; SQL and service callers have no bearer token (""). A caller whose token is in the brain's
// configuration is ErrConfiguredToken: a revoked configured token stays revoked. A caller that is not
// revoked is ErrNotRevoked; one that does not exist is ErrNotFound.
func CallerEnable(ctx context.Context, db DBTX, name string) (*Caller, string, error) {
	cur, err := CallerGet(ctx, db, name)
	if err != nil {
		return nil, "", err
	}
	switch {
	case !cur.Revoked():
		return nil, "", ErrNotRevoked
	case cur.Kind == CallerToken && !cur.HasToken:
		return nil, "", ErrConfiguredToken
	}
	token := ""
	var hash []byte
	if cur.Kind == CallerToken {
		token = newToken("gem_")
		hash = TokenHash(token)
	}
	c, err := scanCaller(db.QueryRow(ctx, `UPDATE core_callers SET revoked_at = NULL, updated_at = now(), token_sha256 = $2
		WHERE name = $1 RETURNING `+callerColumns, name, hash))
	if err != nil {
		return nil, "", Coded(fmt.Errorf("error enabling caller %s: %w", name, err))
	}
	return c, token, nil
}

// ErrCallerClash is returned by CallerEnsure for a caller whose name a caller of another kind, or one with a
// token of its own, already has.
var ErrCallerClash = errors.New("a caller of that name exists and is another")

// CallerEnsure makes a caller the brain knows from its configuration (a configured token, kind token, or a
// service) with these permissions, unless it exists: a caller an operator narrowed keeps its grants across
// restarts.
func CallerEnsure(ctx context.Context, db DBTX, name, kind string, permissions []string, note string) error {
	var existingKind string
	var hasToken bool
	var err error
	// Twice at most: when another session inserts the caller at the same moment, the insert waits for it
	// and does nothing, and the statement's snapshot, taken before that commit, does not show its row (two
	// brain mcp started together: one did not start). The second statement's snapshot shows it.
	for range 2 {
		err = db.QueryRow(ctx, `WITH made AS (
				INSERT INTO core_callers (name, kind, permissions, note) VALUES ($1, $2, $3, $4)
				ON CONFLICT (name) DO NOTHING RETURNING kind, false AS has_token)
			SELECT kind, has_token FROM made UNION ALL SELECT kind, token_sha256 IS NOT NULL FROM core_callers WHERE name = $1`,
			name, kind, nonNil(permissions), note).Scan(&existingKind, &hasToken)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	if err != nil {
		return Coded(fmt.Errorf("error recording caller %s: %w", name, err))
	}
	if hasToken || existingKind != kind {
		return fmt.Errorf("caller %q: %w (rename one of them)", name, ErrCallerClash)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// newToken is 32 random bytes after a prefix that says what the token is for.
func newToken(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenHash is how a token (a caller's or a device's) is stored and looked up.
func TokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
