package oshandlers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// createNote saves a note. Its entity_refs are checked (a missing lead is not_found) and kept; the first
// lead among them is also the note's lead_id.
func (p *pack) createNote(ctx context.Context, c *executor.Call, in ospack.CreateNoteInput) (*ospack.Note, error) {
	if strings.TrimSpace(in.Title) == "" && strings.TrimSpace(in.Content) == "" {
		return nil, executor.InvalidField("title", "and content are both blank: a note needs one of them")
	}
	refs := []ospack.Ref{}
	var leadID *uuid.UUID
	for i := range in.EntityRefs {
		ref, id, err := p.records.resolve(ctx, c.DB, fmt.Sprintf("entity_refs[%d]", i), &in.EntityRefs[i])
		if err != nil {
			return nil, err
		}
		if ref != nil && !slices.Contains(refs, *ref) {
			refs = append(refs, *ref)
		}
		if leadID == nil && ref != nil && ref.Type == refLead {
			leadID = id
		}
	}
	refsJSON, err := json.Marshal(refs)
	if err != nil {
		return nil, err
	}
	tags := normalizeNoteTags(in.Tags)
	n := ospack.Note{EntityRefs: refs}
	err = c.DB.QueryRow(ctx, `INSERT INTO os_notes (domain, title, content, entity_refs, tags, lead_id)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, domain, title, tags, created_at`,
		in.Domain, strings.TrimSpace(in.Title), in.Content, refsJSON, tags, leadID).
		Scan(&n.NoteID, &n.Domain, &n.Title, &n.Tags, &n.CreatedAt)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// normalizeNoteTags trims and drops empty and repeated tags, keeping their order.
func normalizeNoteTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// searchNotes finds notes by full-text match (stemmed words, websearch syntax) or a plain substring for
// partial words; full-text matches rank first. An empty query lists the newest notes.
func searchNotes(ctx context.Context, c *executor.Call, in ospack.SearchNotesInput) (*ospack.SearchNotesOutput, error) {
	ref, err := normalizeRef("entity_ref", in.EntityRef)
	if err != nil {
		return nil, err
	}
	var refFilter []byte
	if ref != nil {
		if refFilter, err = json.Marshal([]ospack.Ref{*ref}); err != nil {
			return nil, err
		}
	}
	results, err := executor.QueryList(ctx, c.DB, func(r pgx.Row) (ospack.NoteHit, error) {
		var h ospack.NoteHit
		var rank float32
		var refs []byte
		err := r.Scan(&h.NoteID, &h.Domain, &h.Title, &refs, &h.Tags, &h.CreatedAt, &h.Snippet, &rank)
		if err == nil {
			err = json.Unmarshal(refs, &h.EntityRefs)
		}
		h.Rank = float64(rank)
		return h, err
	}, `
		WITH q AS (SELECT websearch_to_tsquery('english', $1) AS tsq, $4 AS like)
		SELECT n.id, n.domain, n.title, n.entity_refs, n.tags, n.created_at,
			ts_headline('english', CASE WHEN n.content = '' THEN n.title ELSE n.content END, q.tsq,
				'MaxWords=24, MinWords=8, StartSel=«, StopSel=»') AS snippet,
			ts_rank(gem_note_document(n.title, n.content, n.tags), q.tsq)
				+ CASE WHEN n.title ILIKE q.like THEN 0.05 ELSE 0 END AS rank
		FROM os_notes n, q
		WHERE (gem_note_document(n.title, n.content, n.tags) @@ q.tsq OR n.title ILIKE q.like OR n.content ILIKE q.like)
		  AND `+domainFilterSQL("n.domain", 2)+`
		  AND ($5::jsonb IS NULL OR n.entity_refs @> $5::jsonb)
		ORDER BY rank DESC, n.created_at DESC
		LIMIT $3`, in.Query, in.Domain, executor.LimitOr(in.Limit, 20), executor.LikeContains(in.Query), refFilter)
	if err != nil {
		return nil, err
	}
	return &ospack.SearchNotesOutput{Results: results, Count: len(results)}, nil
}
