package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SkillResources lists a skill's files besides SKILL.md, by path, without their contents.
func SkillResources(ctx context.Context, db gemsql.DBTX, slug string) ([]brain.SkillResource, error) {
	by, err := SkillResourcesBySkill(ctx, db, []string{slug})
	if err != nil {
		return nil, err
	}
	if files := by[slug]; files != nil {
		return files, nil
	}
	return []brain.SkillResource{}, nil
}

// SkillResourcesBySkill lists the files besides SKILL.md of several skills in one statement, by skill slug
// and then path, without their contents. A skill without files has no entry.
func SkillResourcesBySkill(ctx context.Context, db gemsql.DBTX, slugs []string) (map[string][]brain.SkillResource, error) {
	rows, err := db.Query(ctx, `SELECT s.slug, f.path, f.media_type, f.sha256, f.size
		FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.slug = ANY($1) ORDER BY s.slug, f.path`, slugs)
	if err != nil {
		return nil, coded(err)
	}
	out := map[string][]brain.SkillResource{}
	var slug string
	var f brain.SkillResource
	_, err = pgx.ForEachRow(rows, []any{&slug, &f.Path, &f.MediaType, &f.SHA256, &f.Size}, func() error {
		out[slug] = append(out[slug], f)
		return nil
	})
	if err != nil {
		return nil, coded(err)
	}
	return out, nil
}

// SkillResourceGet returns one file of a skill, with its contents.
func SkillResourceGet(ctx context.Context, db gemsql.DBTX, slug, path string) (*brain.SkillResource, error) {
	var f brain.SkillResource
	err := db.QueryRow(ctx, `SELECT f.path, f.media_type, f.sha256, f.size, f.content
		FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.slug = $1 AND f.path = $2`, slug, path).
		Scan(&f.Path, &f.MediaType, &f.SHA256, &f.Size, &f.Content)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, brain.Errorf(brain.ENOTFOUND, "skill %q has no file %q", slug, path)
	}
	if err != nil {
		return nil, coded(err)
	}
	return &f, nil
}

// SkillFilesReplace replaces a skill's files besides SKILL.md with files (none deletes them all). Run it in
// the transaction that saves the skill (SkillImport), so readers see the old folder or the new one.
func SkillFilesReplace(ctx context.Context, db gemsql.DBTX, slug string, files []brain.SkillResource) error {
	var id uuid.UUID
	err := db.QueryRow(ctx, `SELECT id FROM skills WHERE slug = $1`, slug).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return brain.Errorf(brain.ENOTFOUND, "no skill %q", slug)
	}
	if err != nil {
		return coded(err)
	}
	if _, err := db.Exec(ctx, `DELETE FROM skill_files WHERE skill_id = $1`, id); err != nil {
		return coded(fmt.Errorf("error deleting skill files: %w", err))
	}
	if len(files) == 0 {
		return nil
	}
	paths, contents, types := make([]string, len(files)), make([][]byte, len(files)), make([]string, len(files))
	for i, f := range files {
		paths[i], contents[i], types[i] = f.Path, f.Content, f.MediaType
		if contents[i] == nil {
			contents[i] = []byte{}
		}
	}
	_, err = db.Exec(ctx, `INSERT INTO skill_files (skill_id, path, content, media_type)
		SELECT $1, f.path, f.content, f.media_type FROM unnest($2::text[], $3::bytea[], $4::text[]) AS f (path, content, media_type)`,
		id, paths, contents, types)
	if err != nil {
		return constraintError(fmt.Errorf("error storing skill files: %w", err), "skill file", slug)
	}
	return nil
}

// SkillImport saves an imported skill (replacing one of the same slug) and replaces its files, in one
// transaction: a failed import leaves the previous skill and files as they were.
func SkillImport(ctx context.Context, db Beginner, slug string, in *brain.SkillParams, files []brain.SkillResource) (*brain.Skill, error) {
	var sk *brain.Skill
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		if sk, err = SkillSave(ctx, tx, slug, in, brain.SkillUpsert); err != nil {
			return err
		}
		return SkillFilesReplace(ctx, tx, slug, files)
	})
	if err != nil {
		return nil, constraintError(err, "skill", slug)
	}
	return sk, nil
}

// AgentSkills returns the skills available to an agent for a user (gem_agent_skills), by priority, with
// what the chat loop needs to disclose them: instructions, tools, metadata gem-disclosure and file count.
func AgentSkills(ctx context.Context, db gemsql.DBTX, agent, user string) ([]brain.AgentSkill, error) {
	rows, err := db.Query(ctx, agentSkillsSQL, agent, user)
	if err != nil {
		return nil, coded(fmt.Errorf("error loading skills: %w", err))
	}
	out, err := agentSkillsRead(rows)
	return out, coded(err)
}

// AgentSkillsQueue queues AgentSkills's read on b: the skills are in out once b is sent.
func AgentSkillsQueue(b *pgx.Batch, agent, user string, out *[]brain.AgentSkill) {
	b.Queue(agentSkillsSQL, agent, user).Query(func(rows pgx.Rows) (err error) {
		*out, err = agentSkillsRead(rows)
		return err
	})
}

const agentSkillsSQL = `SELECT s.slug, s.name, s.description, s.instructions, s.tools,
		coalesce(s.metadata->>'gem-disclosure', ''), (SELECT count(*) FROM skill_files f WHERE f.skill_id = s.id)
	FROM gem_agent_skills($1, $2) g JOIN skills s ON s.id = g.skill_id
	WHERE g.available ORDER BY g.priority, s.slug`

func agentSkillsRead(rows pgx.Rows) ([]brain.AgentSkill, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (brain.AgentSkill, error) {
		var s brain.AgentSkill
		return s, row.Scan(&s.Slug, &s.Name, &s.Description, &s.Instructions, &s.Tools, &s.Disclosure, &s.Files)
	})
}
