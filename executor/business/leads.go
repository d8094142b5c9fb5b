package business

import (
	"context"
	"errors"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerLeads(h executor.Handlers) {
	h.Func("leads.create", createLead)
	h.Func("leads.update_stage", updateLeadStage)
	h.Func("leads.list_by_stage", listLeadsByStage)
}

type lead struct {
	LeadID    uuid.UUID `json:"lead_id"`
	Name      string    `json:"name"`
	Phone     string    `json:"phone"`
	Email     *string   `json:"email"`
	Suburb    *string   `json:"suburb"`
	Source    string    `json:"source"`
	Stage     string    `json:"stage"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

const leadColumns = `id, name, phone, email, suburb, source, stage, created_at, updated_at`

func scanLead(row pgx.Row) (lead, error) {
	var l lead
	err := row.Scan(&l.LeadID, &l.Name, &l.Phone, &l.Email, &l.Suburb, &l.Source, &l.Stage, &l.CreatedAt, &l.UpdatedAt)
	return l, err
}

// createLead records a lead; a phone number already on file (however it is formatted) returns that lead.
func createLead(ctx context.Context, c *executor.Call) (any, error) {
	var in struct {
		Name    string  `json:"name"`
		Phone   string  `json:"phone"`
		Email   *string `json:"email"`
		Suburb  *string `json:"suburb"`
		Address *string `json:"address"`
		Source  string  `json:"source"`
		Notes   *string `json:"notes"`
	}
	if err := c.Bind(&in); err != nil {
		return nil, err
	}
	if in.Source == "" {
		in.Source = "other"
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `INSERT INTO leads (name, phone, email, suburb, address, source, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (phone_digits) DO NOTHING
		RETURNING `+leadColumns, in.Name, in.Phone, in.Email, in.Suburb, in.Address, in.Source, in.Notes))
	if err == nil {
		return map[string]any{"lead": l, "created": true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, dbError(err)
	}
	l, err = scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads
		WHERE phone_digits = regexp_replace($1, '[^0-9+]', '', 'g')`, in.Phone))
	if err != nil {
		return nil, dbError(err)
	}
	return map[string]any{"lead": l, "created": false}, nil
}

func updateLeadStage(ctx context.Context, c *executor.Call) (any, error) {
	var in struct {
		LeadID uuid.UUID `json:"lead_id"`
		Stage  string    `json:"stage"`
		Reason *string   `json:"reason"`
	}
	if err := c.Bind(&in); err != nil {
		return nil, err
	}
	current, err := scanLead(c.DB.QueryRow(ctx, `SELECT `+leadColumns+` FROM leads WHERE id = $1 FOR UPDATE`, in.LeadID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "lead", in.LeadID)
	}
	if current.Stage == in.Stage {
		return map[string]any{"lead": current, "previous_stage": current.Stage}, nil
	}
	l, err := scanLead(c.DB.QueryRow(ctx, `UPDATE leads SET stage = $2, stage_reason = $3, updated_at = now()
		WHERE id = $1 RETURNING `+leadColumns, in.LeadID, in.Stage, in.Reason))
	if err != nil {
		return nil, dbError(err)
	}
	return map[string]any{"lead": l, "previous_stage": current.Stage}, nil
}

func listLeadsByStage(ctx context.Context, c *executor.Call) (any, error) {
	var in struct {
		Stage string `json:"stage"`
		Limit int    `json:"limit"`
	}
	if err := c.Bind(&in); err != nil {
		return nil, err
	}
	rows, err := c.DB.Query(ctx, `SELECT `+leadColumns+` FROM leads WHERE ($1 = '' OR stage = $1)
		ORDER BY created_at DESC LIMIT $2`, in.Stage, limitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	leads, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lead, error) { return scanLead(r) })
	if err != nil {
		return nil, err
	}
	if leads == nil {
		leads = []lead{}
	}
	return map[string]any{"leads": leads, "count": len(leads)}, nil
}
