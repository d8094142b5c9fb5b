package brain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemhq/gem/registry"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Agent is an agents row.
type Agent struct {
	ID                uuid.UUID `json:"id"`
	Slug              string    `json:"slug"`
	Name              string    `json:"name"`
	Instructions      string    `json:"instructions"`
	Model             *string   `json:"model"`
	Temperature       *float64  `json:"temperature"`
	MaxToolIterations int       `json:"max_tool_iterations"`
	Enabled           bool      `json:"enabled"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// Skill is a skills row with its dependencies and how many agents have it.
type Skill struct {
	ID           uuid.UUID      `json:"id"`
	Slug         string         `json:"slug"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Instructions string         `json:"instructions"`
	Tools        []string       `json:"tools"`
	Category     string         `json:"category"`
	IsBuiltin    bool           `json:"is_builtin"`
	Metadata     map[string]any `json:"metadata"`
	Requires     []string       `json:"requires"`
	AgentCount   int            `json:"agent_count"`
	CreatedAt    time.Time      `json:"created_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
}

// Assignment is a skill given to an agent.
type Assignment struct {
	Skill           string         `json:"skill"`
	ConfigOverrides map[string]any `json:"config_overrides"`
	Priority        int            `json:"priority"`
	Enabled         bool           `json:"enabled"`
	AllowedUsers    []string       `json:"allowed_users"`
	// Available says whether the skill counts for the user asked about: enabled, the user allowed, and every
	// skill it requires available too.
	Available bool `json:"available"`
}

// Agents stores agents and skills and checks skills against the registry.
type Agents struct {
	pool *pgxpool.Pool
	reg  *registry.Registry
}

const agentColumns = `id, slug, name, instructions, model, temperature::float8, max_tool_iterations, enabled, created_at, updated_at`

func scanAgent(row pgx.Row) (*Agent, error) {
	var a Agent
	err := row.Scan(&a.ID, &a.Slug, &a.Name, &a.Instructions, &a.Model, &a.Temperature, &a.MaxToolIterations, &a.Enabled, &a.CreatedAt, &a.UpdatedAt)
	return &a, err
}

// AgentGet returns an agent by slug.
func (s *Agents) AgentGet(ctx context.Context, db gemsql.DBTX, slug string) (*Agent, error) {
	a, err := scanAgent(db.QueryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE slug = $1`, slug))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "no agent %q", slug)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return a, nil
}

// AgentList returns every agent, by slug.
func (s *Agents) AgentList(ctx context.Context) ([]*Agent, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+agentColumns+` FROM agents ORDER BY slug`)
	if err != nil {
		return nil, unavailable(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Agent, error) { return scanAgent(r) })
	if err != nil {
		return nil, unavailable(err)
	}
	if out == nil {
		out = []*Agent{}
	}
	return out, nil
}

// AgentInput is what creates or changes an agent; nil fields keep their value (or default on create).
type AgentInput struct {
	Slug              *string  `json:"slug"`
	Name              *string  `json:"name"`
	Instructions      *string  `json:"instructions"`
	Model             *string  `json:"model"`
	Temperature       *float64 `json:"temperature"`
	MaxToolIterations *int     `json:"max_tool_iterations"`
	Enabled           *bool    `json:"enabled"`
}

var agentInputSchema = registry.MustCompileSchema("agent", []byte(`{
	"type": "object",
	"properties": {
		"slug": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$"},
		"name": {"type": "string", "minLength": 1, "maxLength": 200},
		"instructions": {"type": "string", "maxLength": 100000},
		"model": {"type": ["string", "null"], "maxLength": 200},
		"temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
		"max_tool_iterations": {"type": "integer", "minimum": 1, "maximum": 50},
		"enabled": {"type": "boolean"}
	},
	"additionalProperties": false
}`))

// AgentCreate creates an agent.
func (s *Agents) AgentCreate(ctx context.Context, body []byte) (*Agent, error) {
	in, err := decodeInput[AgentInput](agentInputSchema, body)
	if err != nil {
		return nil, err
	}
	if in.Slug == nil || in.Name == nil {
		return nil, &Error{Code: EINVALID, Message: "an agent needs a slug and a name"}
	}
	a, err := scanAgent(s.pool.QueryRow(ctx, `INSERT INTO agents (slug, name, instructions, model, temperature, max_tool_iterations, enabled)
		VALUES ($1, $2, coalesce($3, ''), $4, $5, coalesce($6, 6), coalesce($7, true)) RETURNING `+agentColumns,
		in.Slug, in.Name, in.Instructions, in.Model, in.Temperature, in.MaxToolIterations, in.Enabled))
	if err != nil {
		return nil, constraintError(err, "agent", *in.Slug)
	}
	return a, nil
}

// AgentUpdate changes the fields given.
func (s *Agents) AgentUpdate(ctx context.Context, slug string, body []byte) (*Agent, error) {
	in, err := decodeInput[AgentInput](agentInputSchema, body)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	_, setModel := raw["model"]
	_, setTemp := raw["temperature"]
	a, err := scanAgent(s.pool.QueryRow(ctx, `UPDATE agents SET
			slug = coalesce($2, slug), name = coalesce($3, name), instructions = coalesce($4, instructions),
			model = CASE WHEN $5 THEN $6 ELSE model END, temperature = CASE WHEN $7 THEN $8 ELSE temperature END,
			max_tool_iterations = coalesce($9, max_tool_iterations), enabled = coalesce($10, enabled), updated_at = now()
		WHERE slug = $1 RETURNING `+agentColumns,
		slug, in.Slug, in.Name, in.Instructions, setModel, in.Model, setTemp, in.Temperature, in.MaxToolIterations, in.Enabled))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "no agent %q", slug)
	}
	if err != nil {
		return nil, constraintError(err, "agent", slug)
	}
	return a, nil
}

// AgentDelete deletes an agent (its assignments and sessions go with it).
func (s *Agents) AgentDelete(ctx context.Context, slug string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM agents WHERE slug = $1`, slug)
	if err != nil {
		return unavailable(err)
	}
	if tag.RowsAffected() == 0 {
		return Errorf(ENOTFOUND, "no agent %q", slug)
	}
	return nil
}

// Assignments lists an agent's skills, with availability for a user.
func (s *Agents) Assignments(ctx context.Context, slug, user string) ([]Assignment, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.slug, a_s.config_overrides, a_s.priority, a_s.enabled, a_s.allowed_users,
			coalesce(g.available, false)
		FROM agents a JOIN agent_skills a_s ON a_s.agent_id = a.id JOIN skills s ON s.id = a_s.skill_id
		LEFT JOIN gem_agent_skills($1, $2) g ON g.skill_id = s.id
		WHERE a.slug = $1 ORDER BY a_s.priority, s.slug`, slug, user)
	if err != nil {
		return nil, unavailable(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Assignment, error) {
		var as Assignment
		err := r.Scan(&as.Skill, &as.ConfigOverrides, &as.Priority, &as.Enabled, &as.AllowedUsers, &as.Available)
		return as, err
	})
	if err != nil {
		return nil, unavailable(err)
	}
	if out == nil {
		out = []Assignment{}
	}
	return out, nil
}

// AgentTools is the set of registry tools an agent may call for a user (gem_agent_tools), sorted.
func (s *Agents) AgentTools(ctx context.Context, db gemsql.DBTX, slug, user string) ([]*registry.Tool, error) {
	rows, err := db.Query(ctx, `SELECT tool FROM gem_agent_tools($1, $2) ORDER BY tool`, slug, user)
	if err != nil {
		return nil, unavailable(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable(err)
	}
	var tools []*registry.Tool
	for _, n := range names {
		if t, ok := s.reg.Tool(n); ok { // a skill may name a tool a newer registry dropped
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// AssignmentInput is the body of PUT /agents/{slug}/skills/{skill}.
type AssignmentInput struct {
	ConfigOverrides map[string]any `json:"config_overrides"`
	Priority        *int           `json:"priority"`
	Enabled         *bool          `json:"enabled"`
	AllowedUsers    []string       `json:"allowed_users"`
}

var assignmentSchema = registry.MustCompileSchema("assignment", []byte(`{
	"type": "object",
	"properties": {
		"config_overrides": {"type": "object"},
		"priority": {"type": "integer", "minimum": 0, "maximum": 10000},
		"enabled": {"type": "boolean"},
		"allowed_users": {"type": ["array", "null"], "items": {"type": "string", "minLength": 1}, "maxItems": 1000}
	},
	"additionalProperties": false
}`))

// Assign gives a skill to an agent, or changes the assignment.
func (s *Agents) Assign(ctx context.Context, agent, skill string, body []byte) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	in, err := decodeInput[AssignmentInput](assignmentSchema, body)
	if err != nil {
		return err
	}
	overrides, _ := json.Marshal(in.ConfigOverrides)
	if in.ConfigOverrides == nil {
		overrides = []byte("{}")
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO agent_skills (agent_id, skill_id, config_overrides, priority, enabled, allowed_users)
		SELECT a.id, s.id, $3, coalesce($4, 100), coalesce($5, true), $6 FROM agents a, skills s WHERE a.slug = $1 AND s.slug = $2
		ON CONFLICT (agent_id, skill_id) DO UPDATE SET config_overrides = EXCLUDED.config_overrides,
			priority = EXCLUDED.priority, enabled = EXCLUDED.enabled, allowed_users = EXCLUDED.allowed_users`,
		agent, skill, overrides, in.Priority, in.Enabled, in.AllowedUsers)
	if err != nil {
		return unavailable(err)
	}
	if tag.RowsAffected() == 0 {
		return s.missing(ctx, agent, skill)
	}
	return nil
}

// Unassign takes a skill from an agent.
func (s *Agents) Unassign(ctx context.Context, agent, skill string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM agent_skills a_s USING agents a, skills s
		WHERE a_s.agent_id = a.id AND a_s.skill_id = s.id AND a.slug = $1 AND s.slug = $2`, agent, skill)
	if err != nil {
		return unavailable(err)
	}
	if tag.RowsAffected() == 0 {
		if err := s.missing(ctx, agent, skill); err != nil {
			return err
		}
		return Errorf(ENOTFOUND, "agent %q does not have skill %q", agent, skill)
	}
	return nil
}

// missing says which of an agent and a skill does not exist.
func (s *Agents) missing(ctx context.Context, agent, skill string) error {
	var hasAgent, hasSkill bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE slug = $1), EXISTS (SELECT 1 FROM skills WHERE slug = $2)`,
		agent, skill).Scan(&hasAgent, &hasSkill)
	switch {
	case err != nil:
		return unavailable(err)
	case !hasAgent:
		return Errorf(ENOTFOUND, "no agent %q", agent)
	case !hasSkill:
		return Errorf(ENOTFOUND, "no skill %q", skill)
	}
	return nil
}

const skillColumns = `s.id, s.slug, s.name, s.description, s.instructions, s.tools, s.category, s.is_builtin, s.metadata,
	coalesce((SELECT array_agg(r.slug ORDER BY r.slug) FROM skill_dependencies d JOIN skills r ON r.id = d.requires_skill_id WHERE d.skill_id = s.id), '{}'),
	(SELECT count(*) FROM agent_skills a_s WHERE a_s.skill_id = s.id), s.created_at, s.updated_at`

func scanSkill(row pgx.Row) (*Skill, error) {
	var sk Skill
	err := row.Scan(&sk.ID, &sk.Slug, &sk.Name, &sk.Description, &sk.Instructions, &sk.Tools, &sk.Category, &sk.IsBuiltin,
		&sk.Metadata, &sk.Requires, &sk.AgentCount, &sk.CreatedAt, &sk.UpdatedAt)
	return &sk, err
}

// SkillGet returns a skill by slug.
func (s *Agents) SkillGet(ctx context.Context, slug string) (*Skill, error) {
	sk, err := scanSkill(s.pool.QueryRow(ctx, `SELECT `+skillColumns+` FROM skills s WHERE s.slug = $1`, slug))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "no skill %q", slug)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return sk, nil
}

// SkillList returns every skill with how many agents have it.
func (s *Agents) SkillList(ctx context.Context) ([]*Skill, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+skillColumns+` FROM skills s ORDER BY s.category, s.slug`)
	if err != nil {
		return nil, unavailable(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Skill, error) { return scanSkill(r) })
	if err != nil {
		return nil, unavailable(err)
	}
	if out == nil {
		out = []*Skill{}
	}
	return out, nil
}

// SkillInput creates, replaces or changes a skill; nil fields keep their value (or default).
type SkillInput struct {
	Slug         *string        `json:"slug"`
	Name         *string        `json:"name"`
	Description  *string        `json:"description"`
	Instructions *string        `json:"instructions"`
	Tools        []string       `json:"tools"`
	Category     *string        `json:"category"`
	Metadata     map[string]any `json:"metadata"`
	Requires     []string       `json:"requires"`
}

var skillInputSchema = registry.MustCompileSchema("skill", []byte(`{
	"type": "object",
	"properties": {
		"slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"},
		"name": {"type": "string", "minLength": 1, "maxLength": 200},
		"description": {"type": "string", "maxLength": 2000},
		"instructions": {"type": "string", "maxLength": 200000},
		"tools": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 500},
		"category": {"type": "string", "minLength": 1, "maxLength": 100},
		"metadata": {"type": "object"},
		"requires": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"}, "maxItems": 100}
	},
	"additionalProperties": false
}`))

// checkTools refuses tool names the registry does not have, naming them.
func (s *Agents) checkTools(tools []string) error {
	var unknown []string
	for _, t := range tools {
		if _, ok := s.reg.Tool(t); !ok {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		return &Error{Code: EINVALID, Message: fmt.Sprintf("not in the registry: %s", strings.Join(unknown, ", ")),
			Details: map[string]any{"unknown_tools": unknown}}
	}
	return nil
}

// SkillSave creates a skill (slug from the body), replaces it (upsert with the path's slug), or changes the
// fields given (patch). Tools must be registry tools; requires must name skills and not close a cycle.
func (s *Agents) SkillSave(ctx context.Context, slug string, body []byte, mode string) (*Skill, error) {
	in, err := decodeInput[SkillInput](skillInputSchema, body)
	if err != nil {
		return nil, err
	}
	if err := s.checkTools(in.Tools); err != nil {
		return nil, err
	}
	if mode == "create" {
		if in.Slug == nil {
			return nil, &Error{Code: EINVALID, Message: "a skill needs a slug"}
		}
		slug = *in.Slug
	} else if in.Slug != nil && *in.Slug != slug && mode == "upsert" {
		return nil, Errorf(EINVALID, "the body's slug %q differs from the path's %q", *in.Slug, slug)
	}
	if (mode == "create" || mode == "upsert") && in.Name == nil {
		return nil, &Error{Code: EINVALID, Message: "a skill needs a name"}
	}
	var metadata []byte
	if in.Metadata != nil {
		metadata, _ = json.Marshal(in.Metadata)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id uuid.UUID
		var err error
		switch mode {
		case "patch":
			err = tx.QueryRow(ctx, `UPDATE skills SET slug = coalesce($2, slug), name = coalesce($3, name),
					description = coalesce($4, description), instructions = coalesce($5, instructions),
					tools = coalesce($6, tools), category = coalesce($7, category), metadata = coalesce($8::jsonb, metadata), updated_at = now()
				WHERE slug = $1 RETURNING id`, slug, in.Slug, in.Name, in.Description, in.Instructions, in.Tools, in.Category, metadata).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ENOTFOUND, "no skill %q", slug)
			}
			if in.Slug != nil {
				slug = *in.Slug
			}
		default:
			conflict := `ON CONFLICT (slug) DO NOTHING`
			if mode == "upsert" {
				conflict = `ON CONFLICT (slug) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description,
					instructions = EXCLUDED.instructions, tools = EXCLUDED.tools, category = EXCLUDED.category,
					metadata = EXCLUDED.metadata, updated_at = now()`
			}
			tools := in.Tools
			if tools == nil {
				tools = []string{}
			}
			err = tx.QueryRow(ctx, `INSERT INTO skills (slug, name, description, instructions, tools, category, metadata)
				VALUES ($1, $2, coalesce($3, ''), coalesce($4, ''), $5, coalesce($6, 'general'), coalesce($7::jsonb, '{}'))
				`+conflict+` RETURNING id`, slug, in.Name, in.Description, in.Instructions, tools, in.Category, metadata).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ECONFLICT, "skill %q already exists", slug)
			}
		}
		if err != nil {
			return err
		}
		if in.Requires == nil && mode == "patch" {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM skill_dependencies WHERE skill_id = $1`, id); err != nil {
			return err
		}
		for _, req := range in.Requires {
			tag, err := tx.Exec(ctx, `INSERT INTO skill_dependencies (skill_id, requires_skill_id) SELECT $1, id FROM skills WHERE slug = $2`, id, req)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return Errorf(EINVALID, "skill %q requires %q, which does not exist", slug, req)
			}
		}
		return nil
	})
	if err != nil {
		return nil, constraintError(err, "skill", slug)
	}
	return s.SkillGet(ctx, slug)
}

// SkillDelete deletes a skill that is not built in.
func (s *Agents) SkillDelete(ctx context.Context, slug string) error {
	var builtin bool
	err := s.pool.QueryRow(ctx, `DELETE FROM skills WHERE slug = $1 AND NOT is_builtin RETURNING false`, slug).Scan(&builtin)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := s.SkillGet(ctx, slug); err != nil {
			return err
		}
		return Errorf(ECONFLICT, "skill %q is built in; take it from agents or disable their assignments instead", slug)
	}
	return unavailable(err)
}

// decodeInput validates a body against its schema (every violation reported) and decodes it.
func decodeInput[T any](schema *registry.Schema, body []byte) (*T, error) {
	if err := schema.Validate(body); err != nil {
		return nil, invalidRequest(err)
	}
	var in T
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, Errorf(EINVALID, "the request body does not fit: %v", err)
	}
	return &in, nil
}

// constraintError explains the database's refusals: a duplicate slug, a dependency cycle.
func constraintError(err error, what, slug string) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return Errorf(ECONFLICT, "%s %q already exists", what, slug)
		case pgErr.Hint == "gem_skill_cycle":
			return &Error{Code: ECONFLICT, Message: pgErr.Message + " (a skill cannot depend on itself through other skills)"}
		case pgErr.Code[:2] == "23" || pgErr.Code[:2] == "22":
			return Errorf(EINVALID, "%s", pgErr.Message)
		}
	}
	return unavailable(err)
}
