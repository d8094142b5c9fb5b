package postgres

import (
	"context"
	"errors"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
)

// CallReadable returns a call the reader may read (brain.Reader), and ENOTFOUND for one that does not exist
// or is not the reader's to read: whether another caller's call exists stays unsaid.
func CallReadable(ctx context.Context, db gemsql.DBTX, reader brain.Reader, id uuid.UUID) (*gemsql.Call, error) {
	call, err := gemsql.CallGet(ctx, db, id)
	if errors.Is(err, gemsql.ErrNotFound) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no call %s", id)
	}
	if err != nil {
		return nil, coded(err)
	}
	held := false
	if !reader.MayReadCall(call.RequestedBy, call.ApprovedBy, false) && reader.Approver {
		_, err := gemsql.ApprovalGet(ctx, db, id)
		if err != nil && !errors.Is(err, gemsql.ErrNotFound) {
			return nil, coded(err)
		}
		held = err == nil
	}
	if !reader.MayReadCall(call.RequestedBy, call.ApprovedBy, held) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no call %s", id)
	}
	return call, nil
}
