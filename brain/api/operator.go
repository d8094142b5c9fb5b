package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// operatorChat answers POST /operator/chat (GEM's): a message to the default agent, in a session that goes
// on with session_id. With no LLM configured — or the default agent missing or disabled — the rules
// planner runs the message in mode enqueue_and_wait instead (mode "rules"), so the endpoint still does what
// it understands and says what it can do otherwise.
func (s *Server) operatorChat(c echo.Context) error {
	params, _, err := decodeBody[brain.OperatorChatParams](c, operatorChatSchema, "")
	if err != nil {
		return err
	}
	// Fingerprinted before a session is made up for it: a retry without session_id is the same request.
	fp, err := requestKey(c, &params.IdempotencyKey, &params.Async, params, c.Request().Header.Get(agentHeader))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	async, stream := wantsAsync(c, params.Async), wantsStream(c)
	if params.IdempotencyKey != "" {
		// A repeat is answered the way its first request was: by the agent, or by the rules planner.
		err := postgres.RequestKeyCheck(ctx, s.pool, requester(c), params.IdempotencyKey, fp)
		var repeat *postgres.RepeatedRequest
		if errors.As(err, &repeat) {
			rec, err := postgres.RunGet(ctx, s.pool, repeat.RunID, false)
			if err != nil {
				return err
			}
			if async {
				return s.acceptedChat(c, rec.ID, rec.ConversationID, true)
			}
			if rec.Mode == brain.ModeChat {
				resp, err := s.chat.Repeated(ctx, repeat)
				if err != nil {
					return err
				}
				return c.JSON(chatStatus(resp), operatorFromChat(resp, rec.Agent))
			}
			params.SessionID = rec.ConversationID // Converse answers the repeat from the run
		} else if err != nil {
			return err
		}
	}
	if params.SessionID == "" {
		params.SessionID = uuid.NewString()
	}
	fallback := "no LLM is configured (GEM_LLM_MODEL), so the rules planner answered"
	if s.llm.Configured {
		agent, err := postgres.AgentGet(ctx, s.pool, s.cfg.DefaultAgent)
		switch {
		case brain.ErrorCode(err) == brain.ENOTFOUND:
			fallback = "the default agent " + s.cfg.DefaultAgent + " does not exist (GEM_BRAIN_DEFAULT_AGENT), so the rules planner answered"
		case err != nil:
			return err
		case !agent.Enabled:
			fallback = "the default agent " + s.cfg.DefaultAgent + " is disabled, so the rules planner answered"
		case !principalOf(c).mayActAs(agent.Slug):
			fallback = "caller " + requester(c) + " may not act as the default agent " + agent.Slug + ", so the rules planner answered"
		default:
			chatParams := &brain.ChatParams{Message: params.Message, UserID: requester(c), SessionID: params.SessionID,
				IdempotencyKey: params.IdempotencyKey, Fingerprint: fp}
			respond := func(resp *brain.ChatResponse, err error) error {
				if resp == nil {
					return err
				}
				status := http.StatusOK
				if err != nil {
					status = HTTPStatus(brain.ErrorCode(err))
					setRetryAfter(c, brain.AsError(err))
				}
				if err == nil {
					status = chatStatus(resp)
				}
				return c.JSON(status, operatorFromChat(resp, agent.Slug))
			}
			if async || stream {
				return s.chatLive(c, agent.Slug, chatParams, stream && !async, respond,
					func(resp *brain.ChatResponse) any { return operatorFromChat(resp, agent.Slug) })
			}
			resp, err := s.chat.Chat(ctx, agent.Slug, chatParams, requester(c))
			return respond(resp, err)
		}
	}
	agent, err := principalOf(c).callAgent(c.Request().Header.Get(agentHeader))
	if err != nil {
		return err
	}
	runParams := &brain.RunParams{Message: params.Message, ConversationID: params.SessionID,
		IdempotencyKey: params.IdempotencyKey, Fingerprint: fp}
	if async {
		caller := requester(c)
		return s.runAsync(c, runParams, func(ctx context.Context, p *brain.RunParams) (*brain.RunResponse, error) {
			return s.runs.Converse(ctx, p, caller, agent)
		},
			func(id uuid.UUID, ended *brain.RunResponse) error {
				// The rules' answer is a reply whatever it says (200 without async): 202 here.
				return s.acceptedChat(c, id, params.SessionID, ended != nil && ended.Repeated)
			})
	}
	run, err := s.runs.Converse(ctx, runParams, requester(c), agent)
	if err != nil {
		return err
	}
	s.runs.Recorded(ctx, run.RunID)
	// A question back (a lead without a suburb) or a failed call is still a reply: 200, ok false.
	out := operatorFromRun(run, params.SessionID)
	out.FallbackReason = fallback
	return c.JSON(http.StatusOK, out)
}

// operatorFromChat maps an agent's answer to GEM's operator response.
func operatorFromChat(resp *brain.ChatResponse, agent string) *brain.OperatorChatResponse {
	out := &brain.OperatorChatResponse{OK: resp.OK, Response: resp.Reply, SessionID: resp.SessionID, Mode: brain.OperatorModeAgent,
		RunID: resp.RunID, Agent: agent, Errors: resp.Errors}
	var results []brain.OperatorToolResult
	for _, tc := range resp.ToolCalls {
		if tc.CallID != nil {
			results = append(results, brain.OperatorToolResult{CallID: *tc.CallID, ToolName: tc.Tool, Status: tc.Status})
		}
	}
	out.ToolResults = toolResults(results)
	if out.Errors == nil {
		out.Errors = []*brain.Error{}
	}
	return out
}

// operatorFromRun maps a rules run to GEM's operator response. Not being understood is not a failure of a
// chat: the reply says what the brain can do.
func operatorFromRun(run *brain.RunResponse, sessionID string) *brain.OperatorChatResponse {
	out := &brain.OperatorChatResponse{Response: run.AssistantMessage, SessionID: sessionID, Mode: brain.OperatorModeRules,
		RunID: run.RunID, Errors: run.Errors}
	status := map[uuid.UUID]string{}
	for _, r := range run.Receipts {
		status[r.CallID] = string(r.Status)
	}
	var results []brain.OperatorToolResult
	for _, e := range run.Enqueued {
		st, ok := status[e.CallID]
		if !ok {
			st = brain.ChatCallPending
		}
		results = append(results, brain.OperatorToolResult{CallID: e.CallID, ToolName: e.ToolName, Status: st})
	}
	out.ToolResults = toolResults(results)
	out.OK = run.Status != brain.RunFailed
	for _, e := range run.Errors {
		if e.Code != brain.ENOPLAN {
			out.OK = false
		}
	}
	return out
}

// toolResults sums up a turn's calls; nil (JSON null, as GEM has it) when there were none.
func toolResults(calls []brain.OperatorToolResult) *brain.OperatorToolResults {
	if len(calls) == 0 {
		return nil
	}
	tr := &brain.OperatorToolResults{Executed: len(calls), Calls: calls}
	for _, c := range calls {
		if c.Status == string(registry.StatusSucceeded) {
			tr.Succeeded++
		}
	}
	return tr
}
