package upkeep

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gemhq/gem/executor/internal/limits"
	"github.com/gemhq/gem/registry/gemlog"
)

// SyncTools writes what a call's insert must know of each registry tool into core_tools: its permissions,
// where its secret inputs are (a request key's fingerprint leaves them out), and whether its calls need approval (docs/governance.md#approvals). Every executor does it at start; the last
// one started wins, as its registry is the newest.
func (u *Upkeep) SyncTools(ctx context.Context) error {
	type row struct {
		Name        string     `json:"name"`
		Permissions []string   `json:"permissions"`
		Required    bool       `json:"approval_required"`
		ExpiresMS   int64      `json:"approval_expires_ms"`
		SecretPaths [][]string `json:"secret_paths"`
	}
	var rows []row
	for _, t := range u.reg.Tools() {
		required, expires := t.ApprovalRequired()
		if !required {
			expires = 24 * time.Hour
		}
		paths := t.SecretPaths()
		if paths == nil {
			paths = [][]string{}
		}
		rows = append(rows, row{Name: t.Name, Permissions: t.Permissions, Required: required, ExpiresMS: expires.Milliseconds(), SecretPaths: paths})
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = u.pool.Exec(ctx, `INSERT INTO core_tools (name, permissions, approval_required, approval_expires_ms, secret_paths)
		SELECT name, permissions, approval_required, approval_expires_ms, secret_paths
		FROM jsonb_to_recordset($1::jsonb)
			AS t(name text, permissions text[], approval_required boolean, approval_expires_ms integer, secret_paths jsonb)
		ON CONFLICT (name) DO UPDATE SET permissions = EXCLUDED.permissions, approval_required = EXCLUDED.approval_required,
			approval_expires_ms = EXCLUDED.approval_expires_ms, secret_paths = EXCLUDED.secret_paths, updated_at = now()
		WHERE (core_tools.permissions, core_tools.approval_required, core_tools.approval_expires_ms, core_tools.secret_paths)
			IS DISTINCT FROM (EXCLUDED.permissions, EXCLUDED.approval_required, EXCLUDED.approval_expires_ms, EXCLUDED.secret_paths)`, string(doc))
	if err != nil {
		return fmt.Errorf("error recording the registry's tools in core_tools: %w", err)
	}
	return nil
}

// forgetRequestKeysSQL deletes the request keys past their window, the calls' (docs/architecture.md#idempotency)
// and the brain's runs' (docs/durable-runs.md#request-keys). One implicit transaction.
const forgetRequestKeysSQL = `WITH calls AS (DELETE FROM core_request_keys WHERE created_at < now() - gem_idempotency_window())
	DELETE FROM brain_request_keys WHERE created_at < now() - gem_idempotency_window()`

// approvalsLoop ends, with their receipt (approval_expired), the calls whose approval expired undecided: it
// sleeps until the next expiry, and looks again at least every second for approvals made meanwhile (none
// expires sooner than a second after it is made).
func (u *Upkeep) approvalsLoop() {
	defer close(u.approvalsDone)
	lastForget := time.Now()
	for {
		if time.Since(lastForget) > time.Minute {
			// Rate windows keyed by an input value (a phone number) would pile up otherwise.
			lastForget = time.Now()
			if _, err := u.pool.Exec(u.ctx, limits.ForgetRatesSQL); err != nil && u.ctx.Err() == nil {
				u.log.Warn().Err(err).Msg("error forgetting old rate windows")
			}
			// So would the request keys clients send; a key past its window no longer holds anyway.
			if _, err := u.pool.Exec(u.ctx, forgetRequestKeysSQL); err != nil && u.ctx.Err() == nil {
				u.log.Warn().Err(err).Msg("error forgetting request keys past their window")
			}
		}
		wait := time.Second
		var next *time.Time
		err := gemlog.Guarded(&u.log, "ending expired approvals", func() (err error) {
			next, err = u.expireApprovals(u.ctx)
			return err
		})
		switch {
		case err != nil && u.ctx.Err() == nil:
			u.log.Warn().Err(err).Msg("error ending expired approvals")
		case next != nil:
			wait = min(wait, max(time.Until(*next), time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-u.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// expireApprovals runs one pass and returns when the next undecided approval expires (nil: none waits).
func (u *Upkeep) expireApprovals(ctx context.Context) (*time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var n int
	if err := u.pool.QueryRow(ctx, `SELECT gem_approvals_expire()`).Scan(&n); err != nil {
		return nil, err
	}
	if n > 0 {
		u.log.Info().Int("calls", n).Msg("approvals expired undecided; their calls ended approval_expired")
	}
	var next *time.Time
	err := u.pool.QueryRow(ctx, `SELECT min(expires_at) FROM core_approvals WHERE decision IS NULL`).Scan(&next)
	return next, err
}
