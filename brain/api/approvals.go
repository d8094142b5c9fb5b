package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

var decisionSchema = mustRequestSchema("DecisionRequest", "decision", `{
	"type": "object",
	"properties": {"reason": {"type": "string", "maxLength": 2000}},
	"additionalProperties": false
}`)

type decisionParams struct {
	Reason string `json:"reason"`
}

// listApprovals answers the calls awaiting a decision, the soonest to expire first.
func (s *Server) listApprovals(c echo.Context) error {
	limit := 100
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return brain.Errorf(brain.EINVALID, "limit must be a whole number from 1 to 1000, not %q", l)
		}
		limit = n
	}
	list, err := gemsql.ApprovalsPending(c.Request().Context(), s.pool, limit)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"approvals": list})
}

// decide approves or rejects a call awaiting approval, in the caller's name. Approved, the call is enqueued
// at once; rejected, its receipt (rejected) is written. A reason is required to reject.
func (s *Server) decide(approve bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := parseID(c, "call")
		if err != nil {
			return err
		}
		p, _, err := decodeBody[decisionParams](c, decisionSchema, "{}")
		if err != nil {
			return err
		}
		if !approve && p.Reason == "" {
			return &brain.Error{Code: brain.EINVALID, Message: "a rejection needs a reason (its receipt says it)", Details: map[string]any{"field": "reason"}}
		}
		ctx := c.Request().Context()
		_, err = gemsql.CallDecide(ctx, s.pool, id, approve, p.Reason, requester(c))
		if err != nil {
			return decisionError(c, s, id, err)
		}
		call, err := gemsql.CallGet(ctx, s.pool, id)
		if err != nil {
			return err
		}
		approval, err := gemsql.ApprovalGet(ctx, s.pool, id)
		if err != nil {
			return err
		}
		return ok(c, http.StatusOK, map[string]any{"call": call, "approval": approval})
	}
}

func decisionError(c echo.Context, s *Server, id uuid.UUID, err error) error {
	switch {
	case errors.Is(err, gemsql.ErrAlreadyDecided), errors.Is(err, gemsql.ErrApprovalExpired):
		return brain.Errorf(brain.ECONFLICT, "%s", err.Error())
	case errors.Is(err, gemsql.ErrMayNotDecide):
		return brain.Errorf(brain.EFORBIDDEN, "%s", err.Error())
	case errors.Is(err, gemsql.ErrNotAwaiting):
		if _, getErr := gemsql.CallGet(c.Request().Context(), s.pool, id); errors.Is(getErr, gemsql.ErrNotFound) {
			return brain.Errorf(brain.ENOTFOUND, "no call %s", id)
		}
		return brain.Errorf(brain.ECONFLICT, "call %s does not await approval", id)
	}
	return err
}
