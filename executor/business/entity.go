package business

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerEntity(h executor.Handlers) {
	h.Func("entity.create", executor.Typed(createEntity))
	h.Func("entity.update", executor.Typed(updateEntity))
	h.Func("entity.get", executor.Typed(getEntity))
	h.Func("entity.search", executor.Typed(searchEntities))
}

// entity is a customer, supplier or site.
type entity struct {
	EntityID  uuid.UUID  `json:"entity_id"`
	Kind      string     `json:"kind"`
	Name      string     `json:"name"`
	Phone     *string    `json:"phone"`
	Email     *string    `json:"email"`
	Address   *string    `json:"address"`
	Suburb    *string    `json:"suburb"`
	Postcode  *string    `json:"postcode"`
	Notes     *string    `json:"notes"`
	ParentID  *uuid.UUID `json:"parent_id"`
	LeadID    *uuid.UUID `json:"lead_id"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

const entityColumns = `id, kind, name, phone, email, address, suburb, postcode, notes, parent_id, lead_id, created_at, updated_at`

func scanEntity(row pgx.Row) (entity, error) {
	var e entity
	err := row.Scan(&e.EntityID, &e.Kind, &e.Name, &e.Phone, &e.Email, &e.Address, &e.Suburb, &e.Postcode, &e.Notes,
		&e.ParentID, &e.LeadID, &e.CreatedAt, &e.UpdatedAt)
	return e, err
}

// checkParent checks that a site's parent is a customer; only sites have parents.
func checkParent(ctx context.Context, c *executor.Call, kind string, parentID *uuid.UUID) error {
	if parentID == nil {
		return nil
	}
	if kind != "site" {
		return executor.Invalid("only a site has a parent (its customer); a %s does not", kind)
	}
	return requireEntity(ctx, c, *parentID, "customer")
}

// requireEntity checks that an entity exists and is of the kind given, and keeps it from being deleted
// for the rest of the call.
func requireEntity(ctx context.Context, c *executor.Call, id uuid.UUID, kind string) error {
	var got string
	if err := c.DB.QueryRow(ctx, `SELECT kind FROM entities WHERE id = $1 FOR SHARE`, id).Scan(&got); err != nil {
		return notFoundIfNoRows(err, "entity", id)
	}
	if got != kind {
		return executor.Invalid("entity %s is a %s, not a %s", id, got, kind)
	}
	return nil
}

type createEntityInput struct {
	Kind     string     `json:"kind"`
	Name     string     `json:"name"`
	Phone    *string    `json:"phone"`
	Email    *string    `json:"email"`
	Address  *string    `json:"address"`
	Suburb   *string    `json:"suburb"`
	Postcode *string    `json:"postcode"`
	Notes    *string    `json:"notes"`
	ParentID *uuid.UUID `json:"parent_id"`
	LeadID   *uuid.UUID `json:"lead_id"`
}

func createEntity(ctx context.Context, c *executor.Call, in createEntityInput) (any, error) {
	if err := checkParent(ctx, c, in.Kind, in.ParentID); err != nil {
		return nil, err
	}
	e, err := scanEntity(c.DB.QueryRow(ctx, `INSERT INTO entities (kind, name, phone, email, address, suburb, postcode, notes, parent_id, lead_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+entityColumns,
		in.Kind, in.Name, in.Phone, in.Email, in.Address, in.Suburb, in.Postcode, in.Notes, in.ParentID, in.LeadID))
	if err != nil {
		return nil, err
	}
	return e, nil
}

// entityUpdatable are the columns entity.update may set, in the order they are reported.
var entityUpdatable = []string{"name", "phone", "email", "address", "suburb", "postcode", "notes", "parent_id"}

type updateEntityOutput struct {
	Entity        entity   `json:"entity"`
	UpdatedFields []string `json:"updated_fields"`
}

type updateEntityInput struct {
	EntityID uuid.UUID `json:"entity_id"`
}

// updateEntity changes the fields given (null clears an optional field); the kind never changes. Only
// fields whose value changes are written, so repeating an update writes nothing.
func updateEntity(ctx context.Context, c *executor.Call, in updateEntityInput) (*updateEntityOutput, error) {
	var fields map[string]json.RawMessage
	if err := c.Bind(&fields); err != nil {
		return nil, err
	}
	current, err := scanEntity(c.DB.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1 FOR UPDATE`, in.EntityID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "entity", in.EntityID)
	}
	// Compare through JSON: the input and the row then agree on null, strings and ids.
	currentJSON, _ := json.Marshal(current)
	var was map[string]json.RawMessage
	_ = json.Unmarshal(currentJSON, &was)
	updated := []string{}
	var sets []string
	args := []any{in.EntityID}
	for _, col := range entityUpdatable {
		raw, ok := fields[col]
		if !ok || string(raw) == string(was[col]) {
			continue
		}
		var v *string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, executor.Invalid("%s: %v", col, err)
		}
		if col == "parent_id" {
			parent, err := nullableUUID(v)
			if err != nil {
				return nil, err
			}
			if err := checkParent(ctx, c, current.Kind, parent); err != nil {
				return nil, err
			}
			if parent != nil && *parent == in.EntityID {
				return nil, executor.Invalid("an entity cannot be its own parent")
			}
		}
		updated = append(updated, col)
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if len(updated) == 0 {
		return &updateEntityOutput{Entity: current, UpdatedFields: updated}, nil
	}
	// Column names come from entityUpdatable, never from the input.
	e, err := scanEntity(c.DB.QueryRow(ctx, `UPDATE entities SET `+strings.Join(sets, ", ")+`, updated_at = now()
		WHERE id = $1 RETURNING `+entityColumns, args...))
	if err != nil {
		return nil, err
	}
	return &updateEntityOutput{Entity: e, UpdatedFields: updated}, nil
}

type getEntityOutput struct {
	Entity   entity   `json:"entity"`
	Children []entity `json:"children"`
}

type getEntityInput struct {
	EntityID uuid.UUID `json:"entity_id"`
}

// getEntity returns an entity and its children (a customer's sites).
func getEntity(ctx context.Context, c *executor.Call, in getEntityInput) (*getEntityOutput, error) {
	e, err := scanEntity(c.DB.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1`, in.EntityID))
	if err != nil {
		return nil, notFoundIfNoRows(err, "entity", in.EntityID)
	}
	children, err := queryList(ctx, c, scanEntity, `SELECT `+entityColumns+` FROM entities WHERE parent_id = $1
		ORDER BY name, created_at`, in.EntityID)
	if err != nil {
		return nil, err
	}
	return &getEntityOutput{Entity: e, Children: children}, nil
}

type searchEntitiesOutput struct {
	Entities []entity `json:"entities"`
	Count    int      `json:"count"`
}

type searchEntitiesInput struct {
	Query string `json:"query"`
	Kind  string `json:"kind"`
	Limit int    `json:"limit"`
}

// searchEntities finds entities whose name, email, address, suburb or postcode contains the query, or
// whose phone number contains its digits. Name matches rank first.
func searchEntities(ctx context.Context, c *executor.Call, in searchEntitiesInput) (*searchEntitiesOutput, error) {
	q := strings.TrimSpace(in.Query)
	digits := strings.TrimLeft(strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, q), "0")
	if len(digits) < 4 {
		digits = "" // too short to mean a phone number
	}
	list, err := queryList(ctx, c, scanEntity, `SELECT `+entityColumns+` FROM entities
		WHERE ($2 = '' OR kind = $2)
		  AND (name ILIKE $1 OR email ILIKE $1 OR address ILIKE $1 OR suburb ILIKE $1 OR postcode ILIKE $1
		       OR ($3 <> '' AND phone_digits LIKE '%' || $3 || '%'))
		ORDER BY CASE WHEN lower(name) = lower($4) THEN 0 WHEN name ILIKE $1 THEN 1 ELSE 2 END, name, created_at
		LIMIT $5`, likeContains(q), in.Kind, digits, q, limitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &searchEntitiesOutput{Entities: list, Count: len(list)}, nil
}
