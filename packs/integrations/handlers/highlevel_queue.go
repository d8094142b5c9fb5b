package integrationshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Operations a HighLevel sync is made of; each runs on its own and, when HighLevel cannot take it now, is
// queued on its own.
const (
	opCreateNote = "create_note"
	opCreateTask = "create_task"
	opMoveStage  = "move_stage"
)

// syncOp is one outbound operation: its kind and what it sends. It is the payload of a queued row.
type syncOp struct {
	Kind      string       `json:"-"`
	ContactID string       `json:"contact_id"`
	Note      string       `json:"note,omitempty"`
	Task      *hlTask      `json:"task,omitempty"`
	Move      *hlStageMove `json:"move,omitempty"`
}

// run performs the operation and returns the id HighLevel gave the note, task or opportunity.
func (h *highLevelClient) run(ctx context.Context, op syncOp) (string, error) {
	switch op.Kind {
	case opCreateNote:
		return h.createNote(ctx, op.ContactID, op.Note)
	case opCreateTask:
		if op.Task == nil {
			return "", errors.New("a queued task operation has no task")
		}
		return h.createTask(ctx, op.ContactID, *op.Task)
	case opMoveStage:
		if op.Move == nil {
			return "", errors.New("a queued stage operation has no stage")
		}
		return h.moveStage(ctx, *op.Move)
	}
	return "", fmt.Errorf("unknown sync operation %q", op.Kind)
}

// recordSent lists what reached HighLevel in the receipt's outside effects.
func recordSent(c *executor.Call, op syncOp, ref string) {
	kind := map[string]string{opCreateNote: "highlevel_note", opCreateTask: "highlevel_task", opMoveStage: "highlevel_opportunity"}[op.Kind]
	c.RecordOutside(registry.OutsideEffect{Kind: kind, Target: "contact " + op.ContactID, Reference: ref})
}

// opOutcome is how one operation of a sync ended.
type opOutcome struct {
	ref     string     // HighLevel's id of what was made or moved, when done
	queued  *uuid.UUID // the queue row, when it will be retried
	failure string     // HighLevel's refusal, when it ended for good
}

// syncRun runs a sync's operations in order. An operation HighLevel cannot take now (rate limited, a
// server error, no answer) is queued with backoff; after such a failure the operations left are queued
// without trying, as HighLevel is unlikely to take them a moment later. Any other failure (a 4xx) ends
// that operation with HighLevel's message; the others still run.
type syncRun struct {
	p        *pack
	c        *executor.Call
	leadID   *uuid.UUID
	deferred *providerError // the transient failure that sends the rest to the queue
}

func (r *syncRun) do(ctx context.Context, op syncOp) (opOutcome, error) {
	if r.deferred != nil {
		id, err := r.p.enqueue(ctx, r.c, op, r.leadID, 0, r.deferred)
		return opOutcome{queued: &id}, err
	}
	ref, err := r.p.highLevel.run(ctx, op)
	if err == nil {
		recordSent(r.c, op, ref)
		return opOutcome{ref: ref}, nil
	}
	pe, ok := asProviderError(err)
	if !ok {
		return opOutcome{}, err // the call's deadline, or a bug
	}
	if pe.retryable() {
		r.deferred = pe
		id, err := r.p.enqueue(ctx, r.c, op, r.leadID, 1, pe)
		return opOutcome{queued: &id}, err
	}
	return opOutcome{failure: pe.Error()}, nil
}

// backoff is the wait before attempt number attempts+1 of a queued operation: the base delay doubled
// for every attempt made, capped, with jitter (a random half of it), and never shorter than what
// HighLevel asked for in Retry-After.
func backoff(cfg integrationspack.HighLevelConfig, attempts int, retryAfter time.Duration) time.Duration {
	d := cfg.RetryBaseDelay
	for i := 1; i < attempts && d < cfg.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, cfg.RetryMaxDelay)
	d = d/2 + rand.N(d/2+1)
	return max(d, retryAfter)
}

// enqueue puts an operation in the sync queue, with attempts already made and the failure that sent it.
func (p *pack) enqueue(ctx context.Context, c *executor.Call, op syncOp, leadID *uuid.UUID, attempts int, cause *providerError) (uuid.UUID, error) {
	payload, err := json.Marshal(op)
	if err != nil {
		return uuid.Nil, fmt.Errorf("error encoding a sync operation: %w", err)
	}
	wait := backoff(p.cfg.HighLevel, max(attempts, 1), cause.RetryAfter)
	var status *int
	if cause.Status != 0 {
		status = &cause.Status
	}
	var id uuid.UUID
	err = c.DB.QueryRow(ctx, `INSERT INTO integration_sync_queue
			(provider, operation, payload, attempts, max_attempts, next_attempt_at, last_error, last_http_status,
			 source_tool, lead_id, highlevel_contact_id)
		VALUES ('highlevel', $1, $2, $3, $4, now() + make_interval(secs => $5), $6, $7, $8, $9, $10)
		RETURNING id`,
		op.Kind, payload, attempts, p.cfg.HighLevel.RetryMaxAttempts, wait.Seconds(), cause.Error(), status,
		c.Tool.Name, leadID, op.ContactID).Scan(&id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("error queueing a HighLevel %s: %w", op.Kind, err)
	}
	return id, nil
}

type processQueueInput struct {
	Limit int `json:"limit"`
}

type processQueueOutput struct {
	Status    string   `json:"status"`
	Processed int      `json:"processed"`
	Succeeded int      `json:"succeeded"`
	Failed    int      `json:"failed"`
	Requeued  int      `json:"requeued"`
	GaveUp    int      `json:"gave_up"`
	Remaining int      `json:"remaining"`
	Message   string   `json:"message"`
	Error     string   `json:"error,omitempty"`
	Errors    []string `json:"errors,omitempty"`
}

// processQueueMax bounds one drain, so it ends within the tool's timeout.
const processQueueMax = 100

// processSyncQueue retries the queued operations that are due, oldest due first. A success finishes the
// row; a transient failure books the next attempt (or gives up after the last one); a 4xx ends the row
// with HighLevel's message. When HighLevel is rate limiting, the drain stops and the rows left wait.
func (p *pack) processSyncQueue(ctx context.Context, c *executor.Call, in processQueueInput) (*processQueueOutput, error) {
	if err := p.highLevelNotConfigured(); err != nil {
		return nil, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, processQueueMax)
	type item struct {
		id          uuid.UUID
		op          syncOp
		payload     []byte
		attempts    int
		maxAttempts int
	}
	rows, err := c.DB.Query(ctx, `SELECT id, operation, payload, attempts, max_attempts FROM integration_sync_queue
		WHERE provider = 'highlevel' AND status = 'pending' AND next_attempt_at <= now()
		ORDER BY next_attempt_at, created_at
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, limit)
	if err != nil {
		return nil, fmt.Errorf("error reading the sync queue: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
		var it item
		err := r.Scan(&it.id, &it.op.Kind, &it.payload, &it.attempts, &it.maxAttempts)
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the sync queue: %w", err)
	}
	out := &processQueueOutput{Status: "ok"}
	for _, it := range items {
		if err := json.Unmarshal(it.payload, &it.op); err != nil {
			out.Processed++
			out.Failed++
			out.GaveUp++
			msg := fmt.Sprintf("queue item %s has a payload GEM cannot read: %v", it.id, err)
			out.Errors = append(out.Errors, msg)
			if err := p.finishItem(ctx, c, it.id, "failed", nil, msg, nil); err != nil {
				return nil, err
			}
			continue
		}
		ref, err := p.highLevel.run(ctx, it.op)
		pe, isProvider := asProviderError(err)
		if err != nil && !isProvider {
			return nil, err
		}
		out.Processed++
		attempts := it.attempts + 1
		switch {
		case err == nil:
			out.Succeeded++
			recordSent(c, it.op, ref)
			if err := p.finishItem(ctx, c, it.id, "succeeded", &ref, "", nil); err != nil {
				return nil, err
			}
		case pe.retryable() && attempts < it.maxAttempts:
			out.Failed++
			out.Requeued++
			wait := backoff(p.cfg.HighLevel, attempts, pe.RetryAfter)
			if _, err := c.DB.Exec(ctx, `UPDATE integration_sync_queue SET attempts = $2, next_attempt_at = now() + make_interval(secs => $3),
				last_error = $4, last_http_status = nullif($5, 0), updated_at = now() WHERE id = $1`,
				it.id, attempts, wait.Seconds(), pe.Error(), pe.Status); err != nil {
				return nil, fmt.Errorf("error rescheduling queue item %s: %w", it.id, err)
			}
		default:
			out.Failed++
			out.GaveUp++
			msg := pe.Error()
			if pe.retryable() {
				msg = fmt.Sprintf("gave up after %d attempts: %s", attempts, msg)
			}
			out.Errors = append(out.Errors, fmt.Sprintf("%s %s for contact %s: %s", it.op.Kind, it.id, it.op.ContactID, msg))
			if err := p.finishItem(ctx, c, it.id, "failed", nil, msg, &pe.Status); err != nil {
				return nil, err
			}
		}
		if pe != nil && pe.Status == http.StatusTooManyRequests {
			break // rate limited: the rest would be refused too
		}
	}
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM integration_sync_queue WHERE provider = 'highlevel' AND status = 'pending'`).
		Scan(&out.Remaining); err != nil {
		return nil, fmt.Errorf("error counting the sync queue: %w", err)
	}
	out.Message = fmt.Sprintf("processed %d queued HighLevel operations: %d succeeded, %d rescheduled, %d given up; %d still pending",
		out.Processed, out.Succeeded, out.Requeued, out.GaveUp, out.Remaining)
	if out.GaveUp > 0 {
		out.Status = "error"
		out.Error = strings.Join(out.Errors, "; ")
	}
	return out, nil
}

// finishItem ends a queue row: succeeded with HighLevel's id of the result, or failed with the reason.
func (p *pack) finishItem(ctx context.Context, c *executor.Call, id uuid.UUID, status string, ref *string, lastError string, httpStatus *int) error {
	var result any
	if ref != nil {
		result = map[string]string{"id": *ref}
	}
	_, err := c.DB.Exec(ctx, `UPDATE integration_sync_queue SET status = $2, attempts = attempts + 1, result = $3,
			last_error = coalesce(nullif($4, ''), last_error), last_http_status = coalesce(nullif($5::integer, 0), last_http_status),
			finished_at = now(), updated_at = now()
		WHERE id = $1`, id, status, result, lastError, httpStatus)
	if err != nil {
		return fmt.Errorf("error finishing queue item %s: %w", id, err)
	}
	return nil
}
