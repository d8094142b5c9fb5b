package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RunEndedChannel is notified with a run's id when the run ends (completed or failed), at commit
// (00042_run_keys_and_turns.sql): a wake-up, after which the run is read.
const RunEndedChannel = "gem_run"

// RequestKeyCheck says what a request key of caller is before a run is made for it: nil when no run holds
// it within its window, a *RepeatedRequest when one holds it for this request (fp), EKEYREUSED when for
// another. It spares a repeat its planning; the run's insert claims the key (gem_run_key_claim) and decides
// when two requests race.
func RequestKeyCheck(ctx context.Context, db gemsql.DBTX, caller, key string, fp []byte) error {
	var run uuid.UUID
	var held []byte
	err := db.QueryRow(ctx, `SELECT run_id, fingerprint FROM brain_request_keys
		WHERE requested_by = $1 AND key_hash = sha256(convert_to($2, 'UTF8')) AND created_at >= now() - gem_idempotency_window()`,
		caller, key).Scan(&run, &held)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return coded(fmt.Errorf("error reading a request key: %w", err))
	case string(held) != string(fp):
		return &brain.Error{Code: brain.EKEYREUSED, Message: fmt.Sprintf("idempotency key %q of caller %q was used for run %s with a different request; "+
			"a retry sends the same request with the same key, a new request a new key", key, caller, run),
			Details: map[string]any{"run_id": run, "idempotency_key": key}}
	}
	return &RepeatedRequest{RunID: run, Key: key}
}

// RunKeyClaimQueue queues on b the claim of a request key for run, which the transaction is about to insert
// (the insert's trigger claims it too, and finds it claimed): for a chat turn, before its session's turn is
// taken, so a repeat is answered as one rather than refused as busy. Errors as the run's insert's
// (through Error): *RepeatedRequest or EKEYREUSED.
func RunKeyClaimQueue(b *pgx.Batch, caller, key string, fp []byte, run uuid.UUID) {
	b.Queue(`SELECT gem_run_key_claim($1, $2, $3, $4)`, caller, key, fp, run)
}

// RunByKey is the run a caller's request key holds within its window (ENOTFOUND when none).
func RunByKey(ctx context.Context, db gemsql.DBTX, caller, key string) (uuid.UUID, error) {
	var run uuid.UUID
	err := db.QueryRow(ctx, `SELECT run_id FROM brain_request_keys
		WHERE requested_by = $1 AND key_hash = sha256(convert_to($2, 'UTF8')) AND created_at >= now() - gem_idempotency_window()`,
		caller, key).Scan(&run)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, brain.Errorf(brain.ENOTFOUND, "no run of caller %q has idempotency key %q", caller, key)
	}
	if err != nil {
		return uuid.Nil, coded(fmt.Errorf("error reading a request key: %w", err))
	}
	return run, nil
}

// RunAwaitEnd returns run id once it has ended (completed or failed), or as it is when ctx ends first. The
// listener must listen on RunEndedChannel; it is watched before the run is read, so no end is missed.
func RunAwaitEnd(ctx context.Context, pool *pgxpool.Pool, ended *gemsql.Listener, id uuid.UUID) (*brain.Run, error) {
	wake, stop := ended.Watch(RunEndedChannel, id.String())
	defer stop()
	for {
		// A read outlives ctx's end by a little: the run's state is the answer then.
		rec, err := RunGet(context.WithoutCancel(ctx), pool, id, false)
		if err != nil {
			return nil, coded(err)
		}
		if rec.Status == brain.RunCompleted || rec.Status == brain.RunFailed {
			return rec, nil
		}
		select {
		case <-ctx.Done():
			return rec, nil
		case <-wake:
		}
	}
}
