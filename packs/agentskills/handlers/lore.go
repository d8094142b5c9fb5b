package agentskillshandlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/jackc/pgx/v5"
)

// Lore defaults.
const (
	defaultCollection  = "default"
	defaultQueryLimit  = 5
	defaultMinScore    = 0.15
	contextSeparator   = " > "
	maxContextChars    = 2000
	loreDocumentFields = `id, collection, source, title, version, chunk_count, chars, content_hash, updated_at`
)

// loreDocumentTargets are where loreDocumentFields scan to.
func loreDocumentTargets(d *agentskillspack.LoreDocument) []any {
	return []any{&d.DocumentID, &d.Collection, &d.Source, &d.Title, &d.Version, &d.ChunkCount, &d.Chars, &d.ContentHash, &d.UpdatedAt}
}

// ingestLore stores a document and its chunks, keyed by (collection, source). Ingesting a source again
// with the same title, text, metadata and chunking changes nothing ("unchanged"); with anything different it
// replaces the document's chunks and keeps its id ("replaced", version + 1).
func (p *pack) ingestLore(ctx context.Context, c *executor.Call, in agentskillspack.IngestLoreInput) (*agentskillspack.LoreDocument, error) {
	in.Source = strings.TrimSpace(in.Source)
	if in.Source == "" {
		return nil, executor.Invalid("source is blank")
	}
	if in.Collection == "" {
		in.Collection = defaultCollection
	}
	if len(in.Metadata) == 0 || string(in.Metadata) == "null" {
		in.Metadata = json.RawMessage(`{}`)
	}
	opts := ChunkOptions{TargetChars: DefaultChunkChars, OverlapChars: DefaultOverlapChars}
	if in.ChunkChars != nil {
		opts.TargetChars = *in.ChunkChars
	}
	if in.OverlapChars != nil {
		opts.OverlapChars = *in.OverlapChars
	}
	if opts.OverlapChars > opts.TargetChars/2 {
		return nil, executor.Invalid("overlap_chars (%d) must be at most half of chunk_chars (%d)", opts.OverlapChars, opts.TargetChars)
	}
	title := strings.TrimSpace(in.Title)
	if title == "" {
		title = defaultTitle(in.Text, in.Source)
	}

	chunks := SplitText(in.Text, opts)
	ordinals := make([]int32, len(chunks))
	contexts := make([]string, len(chunks))
	contents := make([]string, len(chunks))
	for i, ch := range chunks {
		ordinals[i] = int32(i)
		contexts[i] = chunkContext(title, ch.Headings)
		contents[i] = ch.Text
	}
	hash := contentHash(title, in.Text, in.Metadata, opts)

	var d agentskillspack.LoreDocument
	var inserted bool
	err := c.DB.QueryRow(ctx, `INSERT INTO lore_documents
			(collection, source, title, metadata, content_hash, chars, chunk_chars, overlap_chars, chunk_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (collection, source) DO UPDATE SET
			title = EXCLUDED.title, metadata = EXCLUDED.metadata, content_hash = EXCLUDED.content_hash,
			chars = EXCLUDED.chars, chunk_chars = EXCLUDED.chunk_chars, overlap_chars = EXCLUDED.overlap_chars,
			chunk_count = EXCLUDED.chunk_count, version = lore_documents.version + 1, updated_at = now()
		WHERE lore_documents.content_hash <> EXCLUDED.content_hash
		RETURNING `+loreDocumentFields+`, (xmax = 0)`,
		in.Collection, in.Source, title, in.Metadata, hash, runeLen(in.Text), opts.TargetChars, opts.OverlapChars, len(chunks)).
		Scan(append(loreDocumentTargets(&d), &inserted)...)
	if errors.Is(err, pgx.ErrNoRows) {
		// The same content is stored already.
		err = c.DB.QueryRow(ctx, `SELECT `+loreDocumentFields+` FROM lore_documents WHERE collection = $1 AND source = $2`,
			in.Collection, in.Source).Scan(loreDocumentTargets(&d)...)
		if err != nil {
			return nil, fmt.Errorf("error reading lore document: %w", err)
		}
		d.Status = agentskillspack.IngestUnchanged
		return &d, nil
	}
	if err != nil {
		return nil, err
	}
	d.Status = agentskillspack.IngestCreated
	if !inserted {
		d.Status = agentskillspack.IngestReplaced
		if _, err := c.DB.Exec(ctx, `DELETE FROM lore_chunks WHERE document_id = $1`, d.DocumentID); err != nil {
			return nil, fmt.Errorf("error deleting old chunks: %w", err)
		}
	}
	if len(chunks) > 0 {
		_, err = c.DB.Exec(ctx, `INSERT INTO lore_chunks (document_id, ordinal, context, content)
			SELECT $1, u.ordinal, u.context, u.content
			FROM unnest($2::integer[], $3::text[], $4::text[]) AS u(ordinal, context, content)`,
			d.DocumentID, ordinals, contexts, contents)
		if err != nil {
			return nil, err
		}
	}
	return &d, nil
}

// defaultTitle is a document's title when the input gives none: its first heading, else the source's file
// name without its extension.
func defaultTitle(text, source string) string {
	for _, b := range parseBlocks(text) {
		if b.level > 0 {
			return truncate(b.title, 500)
		}
	}
	base := path.Base(strings.ReplaceAll(source, `\`, "/"))
	if ext := path.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	if strings.TrimSpace(base) == "" || base == "." || base == "/" {
		base = source
	}
	return truncate(base, 500)
}

// chunkContext is "Title > Heading > Subheading"; a first heading that repeats the title is left out.
func chunkContext(title string, headings []string) string {
	parts := []string{title}
	for i, h := range headings {
		if i == 0 && strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(title)) {
			continue
		}
		parts = append(parts, h)
	}
	return truncate(strings.Join(parts, contextSeparator), maxContextChars-1)
}

// contentHash is the sha256 (hex) of everything a document's chunks are made from.
func contentHash(title, text string, metadata json.RawMessage, opts ChunkOptions) string {
	b, _ := json.Marshal(struct {
		Chunker  string          `json:"chunker"`
		Title    string          `json:"title"`
		Text     string          `json:"text"`
		Metadata json.RawMessage `json:"metadata"`
		Chunk    int             `json:"chunk_chars"`
		Overlap  int             `json:"overlap_chars"`
	}{ChunkerVersion, title, text, metadata, opts.TargetChars, opts.OverlapChars})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// queryLore finds the lore chunks that best match a plain-text query (gem_lore_search in the migration has
// the ranking).
func (p *pack) queryLore(ctx context.Context, c *executor.Call, in agentskillspack.QueryLoreInput) (*agentskillspack.QueryLoreOutput, error) {
	query := strings.TrimSpace(in.Query)
	if query == "" {
		return nil, executor.Invalid("query is blank")
	}
	if in.Limit <= 0 {
		in.Limit = defaultQueryLimit
	}
	minScore := defaultMinScore
	if in.MinScore != nil {
		minScore = *in.MinScore
	}
	rows, err := c.DB.Query(ctx, `SELECT s.rank, s.score, s.chunk_id, s.document_id, d.collection, d.source, d.title, d.metadata,
			ch.ordinal, ch.context, ch.content, s.snippet, s.coverage, s.similarity, s.density
		FROM gem_lore_search($1, $2, $3, $4) s
		JOIN lore_chunks ch ON ch.id = s.chunk_id
		JOIN lore_documents d ON d.id = s.document_id
		ORDER BY s.rank`, query, in.Collection, minScore, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("error searching lore: %w", err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (agentskillspack.LoreHit, error) {
		var h agentskillspack.LoreHit
		var score, coverage, similarity, density float32
		err := r.Scan(&h.Rank, &score, &h.ChunkID, &h.DocumentID, &h.Collection, &h.Source, &h.Title, &h.Metadata,
			&h.Ordinal, &h.Context, &h.Text, &h.Snippet, &coverage, &similarity, &density)
		h.Score = round4(float64(score))
		h.Match = agentskillspack.LoreMatch{Coverage: round4(float64(coverage)), Similarity: round4(float64(similarity)), Density: round4(float64(density))}
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading lore chunks: %w", err)
	}
	if hits == nil {
		hits = []agentskillspack.LoreHit{}
	}
	return &agentskillspack.QueryLoreOutput{Query: query, Chunks: hits, Count: len(hits)}, nil
}
