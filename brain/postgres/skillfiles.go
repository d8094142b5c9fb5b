package postgres

import (
	"context"
	"errors"

	"github.com/gemhq/gem/brain"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/jackc/pgx/v5"
)

// SkillResources lists a skill's files besides SKILL.md, by path, without their contents.
func SkillResources(ctx context.Context, db gemsql.DBTX, slug string) ([]brain.SkillResource, error) {
	rows, err := db.Query(ctx, `SELECT f.path, f.media_type, f.sha256, f.size
		FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.slug = $1 ORDER BY f.path`, slug)
	if err != nil {
		return nil, Error(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (brain.SkillResource, error) {
		var f brain.SkillResource
		err := r.Scan(&f.Path, &f.MediaType, &f.SHA256, &f.Size)
		return f, err
	})
	if err != nil {
		return nil, Error(err)
	}
	if out == nil {
		out = []brain.SkillResource{}
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
		return nil, Error(err)
	}
	return &f, nil
}
