package run

import (
	"context"
	"encoding/json"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
)

// carriedIDs are the ids a conversation carries from one message to the next: those of the records its
// calls made or touched, so "new lead ..." then "schedule an inspection friday at 10am" books it for
// that lead.
var carriedIDs = []string{"lead_id", "inspection_id", "quote_id", "job_id", "invoice_id", "entity_id", "event_id", "asset_id", "task_id"}

// UseRules sets the planner of conversations that no agent answers (POST /operator/chat without an LLM).
// It defaults to the service's planner.
func (s *Service) UseRules(p brain.Planner) { s.rules = p }

// Converse runs one message of a conversation with the rules planner, in mode enqueue_and_wait: the
// context is the conversation's so far (the last run's context, updated with the ids its calls' results
// name), so a conversation goes on from the records it made.
//
// req holds the message, the session (ConversationID) and the request's key and fingerprint, if any.
func (s *Service) Converse(ctx context.Context, req *brain.RunParams, requester, agent string) (*brain.RunResponse, error) {
	ctxIDs, err := s.conversationContext(ctx, req.ConversationID, requester)
	if err != nil {
		return nil, err
	}
	planner := s.rules
	if planner == nil {
		planner = s.planner
	}
	req.Mode, req.Context = brain.ModeEnqueueAndWait, ctxIDs
	return s.run(ctx, planner, req, requester, agent)
}

// conversationContext is the context a conversation has reached, or nil for a new one. A conversation
// belongs to the caller that started it: another caller's is not found (404).
func (s *Service) conversationContext(ctx context.Context, sessionID, requester string) (map[string]any, error) {
	ctxIDs, callIDs, found, err := postgres.ConversationLast(ctx, s.pool, sessionID, requester)
	if err != nil || !found {
		return nil, err
	}
	receipts, err := gemsql.ReceiptsGet(ctx, s.pool, callIDs)
	if err != nil {
		return nil, err
	}
	if ctxIDs == nil {
		ctxIDs = map[string]any{}
	}
	for _, id := range callIDs { // in plan order: a later call's id wins
		if r := receipts[id]; r != nil && r.Status == registry.StatusSucceeded {
			for k, v := range idsIn(r) {
				ctxIDs[k] = v
			}
		}
	}
	return ctxIDs, nil
}

// idsIn picks the carried ids (UUIDs) at the top of a receipt's result.
func idsIn(r *registry.Receipt) map[string]string {
	var res map[string]any
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, k := range carriedIDs {
		if s, ok := res[k].(string); ok {
			if _, err := uuid.Parse(s); err == nil {
				out[k] = s
			}
		}
	}
	return out
}
