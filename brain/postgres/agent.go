package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const agentColumns = `id, slug, name, instructions, model, temperature::float8, max_tool_iterations, enabled, code_mode, created_at, updated_at`

func scanAgent(row pgx.Row) (*brain.Agent, error) {
	var a brain.Agent
	err := row.Scan(&a.ID, &a.Slug, &a.Name, &a.Instructions, &a.Model, &a.Temperature, &a.MaxToolIterations, &a.Enabled, &a.CodeMode, &a.CreatedAt, &a.UpdatedAt)
	return &a, err
}

// AgentGet returns an agent by slug.
func AgentGet(ctx context.Context, db gemsql.DBTX, slug string) (*brain.Agent, error) {
	a, err := scanAgent(db.QueryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE slug = $1`, slug))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no agent %q", slug)
	}
	if err != nil {
		return nil, coded(err)
	}
	return a, nil
}

// AgentList returns every agent, by slug.
func AgentList(ctx context.Context, db gemsql.DBTX) ([]*brain.Agent, error) {
	rows, err := db.Query(ctx, `SELECT `+agentColumns+` FROM agents ORDER BY slug`)
	if err != nil {
		return nil, coded(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*brain.Agent, error) { return scanAgent(r) })
	if err != nil {
		return nil, coded(err)
	}
	if out == nil {
		out = []*brain.Agent{}
	}
	return out, nil
}

// AgentCreate creates an agent; it needs a slug and a name.
func AgentCreate(ctx context.Context, db gemsql.DBTX, in *brain.AgentParams) (*brain.Agent, error) {
	if in.Slug == nil || in.Name == nil {
		return nil, &brain.Error{Code: brain.EINVALID, Message: "an agent needs a slug and a name"}
	}
	a, err := scanAgent(db.QueryRow(ctx, `INSERT INTO agents (slug, name, instructions, model, temperature, max_tool_iterations, enabled, code_mode)
		VALUES ($1, $2, coalesce($3, ''), $4, $5, coalesce($6, 6), coalesce($7, true), coalesce($8, false)) RETURNING `+agentColumns,
		in.Slug, in.Name, in.Instructions, in.Model, in.Temperature, in.MaxToolIterations, in.Enabled, in.CodeMode))
	if err != nil {
		return nil, constraintError(err, "agent", *in.Slug)
	}
	return a, nil
}

// AgentUpdate changes the fields given.
func AgentUpdate(ctx context.Context, db gemsql.DBTX, slug string, in *brain.AgentParams) (*brain.Agent, error) {
	a, err := scanAgent(db.QueryRow(ctx, `UPDATE agents SET
			slug = coalesce($2, slug), name = coalesce($3, name), instructions = coalesce($4, instructions),
			model = CASE WHEN $5 THEN $6 ELSE model END, temperature = CASE WHEN $7 THEN $8 ELSE temperature END,
			max_tool_iterations = coalesce($9, max_tool_iterations), enabled = coalesce($10, enabled),
			code_mode = coalesce($11, code_mode), updated_at = now()
		WHERE slug = $1 RETURNING `+agentColumns,
		slug, in.Slug, in.Name, in.Instructions, in.ModelSet, in.Model, in.TemperatureSet, in.Temperature, in.MaxToolIterations, in.Enabled, in.CodeMode))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no agent %q", slug)
	}
	if err != nil {
		return nil, constraintError(err, "agent", slug)
	}
	return a, nil
}

// AgentDelete deletes an agent (its assignments and sessions go with it).
func AgentDelete(ctx context.Context, db gemsql.DBTX, slug string) error {
	tag, err := db.Exec(ctx, `DELETE FROM agents WHERE slug = $1`, slug)
	if err != nil {
		return coded(err)
	}
	if tag.RowsAffected() == 0 {
		return brain.Errorf(brain.ENOTFOUND, "no agent %q", slug)
	}
	return nil
}

// AssignmentList lists an agent's skills, with availability for a user.
func AssignmentList(ctx context.Context, db gemsql.DBTX, slug, user string) ([]brain.Assignment, error) {
	rows, err := db.Query(ctx, `SELECT s.slug, a_s.config_overrides, a_s.priority, a_s.enabled, a_s.allowed_users,
			coalesce(g.available, false), a_s.call_timeout_ms, a_s.call_max_attempts, a_s.call_priority
		FROM agents a JOIN agent_skills a_s ON a_s.agent_id = a.id JOIN skills s ON s.id = a_s.skill_id
		LEFT JOIN gem_agent_skills($1, $2) g ON g.skill_id = s.id
		WHERE a.slug = $1 ORDER BY a_s.priority, s.slug`, slug, user)
	if err != nil {
		return nil, coded(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (brain.Assignment, error) {
		var as brain.Assignment
		err := r.Scan(&as.Skill, &as.ConfigOverrides, &as.Priority, &as.Enabled, &as.AllowedUsers, &as.Available,
			&as.CallTimeoutMS, &as.CallMaxAttempts, &as.CallPriority)
		return as, err
	})
	if err != nil {
		return nil, coded(err)
	}
	if out == nil {
		out = []brain.Assignment{}
	}
	return out, nil
}

// AgentTools is the set of registry tools an agent may call for a user (gem_agent_tools), sorted.
func AgentTools(ctx context.Context, db gemsql.DBTX, reg *registry.Registry, slug, user string) ([]*registry.Tool, error) {
	rows, err := db.Query(ctx, agentToolsSQL, slug, user)
	if err != nil {
		return nil, coded(err)
	}
	tools, err := agentToolsRead(rows, reg)
	return tools, coded(err)
}

// AgentToolsQueue queues AgentTools's read on b: the tools are in out once b is sent.
func AgentToolsQueue(b *pgx.Batch, reg *registry.Registry, slug, user string, out *[]*registry.Tool) {
	b.Queue(agentToolsSQL, slug, user).Query(func(rows pgx.Rows) (err error) {
		*out, err = agentToolsRead(rows, reg)
		return err
	})
}

const agentToolsSQL = `SELECT tool FROM gem_agent_tools($1, $2) ORDER BY tool`

func agentToolsRead(rows pgx.Rows, reg *registry.Registry) ([]*registry.Tool, error) {
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var tools []*registry.Tool
	for _, n := range names {
		if t, ok := reg.Tool(n); ok { // a skill may name a tool a newer registry dropped
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// AgentToolsMissing returns the tools of tools an agent may not call for a user (gem_agent_may_call, the
// executor's test), in the order given: nil when it may call them all.
func AgentToolsMissing(ctx context.Context, db gemsql.DBTX, slug, user string, tools []string) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT t FROM unnest($3::text[]) WITH ORDINALITY AS u (t, n)
		WHERE NOT gem_agent_may_call($1, $2, t) ORDER BY n`, slug, user, tools)
	if err != nil {
		return nil, coded(err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(missing) == 0 {
		return nil, coded(err)
	}
	return missing, nil
}

// Assign gives a skill to an agent, or changes the assignment.
func Assign(ctx context.Context, db gemsql.DBTX, agent, skill string, in *brain.AssignmentParams) error {
	overrides, _ := json.Marshal(in.ConfigOverrides)
	if in.ConfigOverrides == nil {
		overrides = []byte("{}")
	}
	tag, err := db.Exec(ctx, `INSERT INTO agent_skills (agent_id, skill_id, config_overrides, priority, enabled, allowed_users,
			call_timeout_ms, call_max_attempts, call_priority)
		SELECT a.id, s.id, $3, coalesce($4, 100), coalesce($5, true), $6, $7, $8, $9 FROM agents a, skills s WHERE a.slug = $1 AND s.slug = $2
		ON CONFLICT (agent_id, skill_id) DO UPDATE SET config_overrides = EXCLUDED.config_overrides,
			priority = EXCLUDED.priority, enabled = EXCLUDED.enabled, allowed_users = EXCLUDED.allowed_users,
			call_timeout_ms = EXCLUDED.call_timeout_ms, call_max_attempts = EXCLUDED.call_max_attempts,
			call_priority = EXCLUDED.call_priority`,
		agent, skill, overrides, in.Priority, in.Enabled, in.AllowedUsers, in.CallTimeoutMS, in.CallMaxAttempts, in.CallPriority)
	if err != nil {
		return coded(err)
	}
	if tag.RowsAffected() == 0 {
		return missing(ctx, db, agent, skill)
	}
	return nil
}

// Unassign takes a skill from an agent.
func Unassign(ctx context.Context, db gemsql.DBTX, agent, skill string) error {
	tag, err := db.Exec(ctx, `DELETE FROM agent_skills a_s USING agents a, skills s
		WHERE a_s.agent_id = a.id AND a_s.skill_id = s.id AND a.slug = $1 AND s.slug = $2`, agent, skill)
	if err != nil {
		return coded(err)
	}
	if tag.RowsAffected() == 0 {
		if err := missing(ctx, db, agent, skill); err != nil {
			return err
		}
		return brain.Errorf(brain.ENOTFOUND, "agent %q does not have skill %q", agent, skill)
	}
	return nil
}

// missing says which of an agent and a skill does not exist.
func missing(ctx context.Context, db gemsql.DBTX, agent, skill string) error {
	var hasAgent, hasSkill bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE slug = $1), EXISTS (SELECT 1 FROM skills WHERE slug = $2)`,
		agent, skill).Scan(&hasAgent, &hasSkill)
	switch {
	case err != nil:
		return coded(err)
	case !hasAgent:
		return brain.Errorf(brain.ENOTFOUND, "no agent %q", agent)
	case !hasSkill:
		return brain.Errorf(brain.ENOTFOUND, "no skill %q", skill)
	}
	return nil
}

const skillColumns = `s.id, s.slug, s.name, s.description, s.instructions, s.tools, s.category, s.is_builtin, s.metadata,
	coalesce((SELECT array_agg(r.slug ORDER BY r.slug) FROM skill_dependencies d JOIN skills r ON r.id = d.requires_skill_id WHERE d.skill_id = s.id), '{}'),
	(SELECT count(*) FROM agent_skills a_s WHERE a_s.skill_id = s.id), s.created_at, s.updated_at`

func scanSkill(row pgx.Row) (*brain.Skill, error) {
	var sk brain.Skill
	err := row.Scan(&sk.ID, &sk.Slug, &sk.Name, &sk.Description, &sk.Instructions, &sk.Tools, &sk.Category, &sk.IsBuiltin,
		&sk.Metadata, &sk.Requires, &sk.AgentCount, &sk.CreatedAt, &sk.UpdatedAt)
	return &sk, err
}

// SkillGet returns a skill by slug.
func SkillGet(ctx context.Context, db gemsql.DBTX, slug string) (*brain.Skill, error) {
	sk, err := scanSkill(db.QueryRow(ctx, `SELECT `+skillColumns+` FROM skills s WHERE s.slug = $1`, slug))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "no skill %q", slug)
	}
	if err != nil {
		return nil, coded(err)
	}
	return sk, nil
}

// SkillList returns every skill with how many agents have it.
func SkillList(ctx context.Context, db gemsql.DBTX) ([]*brain.Skill, error) {
	rows, err := db.Query(ctx, `SELECT `+skillColumns+` FROM skills s ORDER BY s.category, s.slug`)
	if err != nil {
		return nil, coded(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*brain.Skill, error) { return scanSkill(r) })
	if err != nil {
		return nil, coded(err)
	}
	if out == nil {
		out = []*brain.Skill{}
	}
	return out, nil
}

// SkillSave creates a skill, replaces it (upsert) or changes the fields given (patch), with its
// dependencies, in one transaction; params are checked first (brain.SkillParams.Check), and requires must
// name skills and not close a cycle.
func SkillSave(ctx context.Context, db Beginner, slug string, in *brain.SkillParams, mode brain.SkillSaveMode) (*brain.Skill, error) {
	var metadata []byte
	if in.Metadata != nil {
		metadata, _ = json.Marshal(in.Metadata)
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var id uuid.UUID
		var err error
		switch mode {
		case brain.SkillPatch:
			err = tx.QueryRow(ctx, `UPDATE skills SET slug = coalesce($2, slug), name = coalesce($3, name),
					description = coalesce($4, description), instructions = coalesce($5, instructions),
					tools = coalesce($6, tools), category = coalesce($7, category), metadata = coalesce($8::jsonb, metadata), updated_at = now()
				WHERE slug = $1 RETURNING id`, slug, in.Slug, in.Name, in.Description, in.Instructions, in.Tools, in.Category, metadata).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return brain.Errorf(brain.ENOTFOUND, "no skill %q", slug)
			}
			if in.Slug != nil {
				slug = *in.Slug
			}
		default:
			conflict := `ON CONFLICT (slug) DO NOTHING`
			if mode == brain.SkillUpsert {
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
				return brain.Errorf(brain.ECONFLICT, "skill %q already exists", slug)
			}
		}
		if err != nil {
			return err
		}
		if in.Requires == nil && mode == brain.SkillPatch {
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
				return brain.Errorf(brain.EINVALID, "skill %q requires %q, which does not exist", slug, req)
			}
		}
		return nil
	})
	if err != nil {
		return nil, constraintError(err, "skill", slug)
	}
	return SkillGet(ctx, db, slug)
}

// SkillDelete deletes a skill that is not built in.
func SkillDelete(ctx context.Context, db gemsql.DBTX, slug string) error {
	var builtin bool
	err := db.QueryRow(ctx, `DELETE FROM skills WHERE slug = $1 AND NOT is_builtin RETURNING false`, slug).Scan(&builtin)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := SkillGet(ctx, db, slug); err != nil {
			return err
		}
		return brain.Errorf(brain.ECONFLICT, "skill %q is built in; take it from agents or disable their assignments instead", slug)
	}
	return coded(err)
}

// constraintError explains the database's refusals: a duplicate slug, a dependency cycle.
func constraintError(err error, what, slug string) error {
	var e *brain.Error
	if errors.As(err, &e) {
		return e
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505":
			return brain.Errorf(brain.ECONFLICT, "%s %q already exists", what, slug)
		case pgErr.Hint == "gem_skill_cycle":
			return &brain.Error{Code: brain.ECONFLICT, Message: pgErr.Message + " (a skill cannot depend on itself through other skills)"}
		case pgErr.Code[:2] == "23" || pgErr.Code[:2] == "22":
			return brain.Errorf(brain.EINVALID, "%s", pgErr.Message)
		}
	}
	return coded(err)
}
