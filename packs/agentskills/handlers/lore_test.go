package agentskillshandlers_test

import (
	"context"
	"testing"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

const dragonsMD = `# Dragons of the North

Dragons are the oldest creatures of the northern realm.

## Habitat

The ancient dragon Vyrmathrax sleeps under the Ember Mountain, guarding a hoard of gold and stolen crowns.

## Diet

Dragons eat mountain goats and, in hard winters, the occasional knight.
`

const guildsMD = `# Merchant Guilds

The Salt Guild controls the trade road between Riverton and the coast.
Its tax collectors file an invoice with every caravan in spring.

## The Necromancer's Debt

A necromancer named Othric owes the guild three hundred silver marks.
`

type ingested struct {
	DocumentID  uuid.UUID `json:"document_id"`
	Collection  string    `json:"collection"`
	Source      string    `json:"source"`
	Title       string    `json:"title"`
	Status      string    `json:"status"`
	Version     int       `json:"version"`
	ChunkCount  int       `json:"chunk_count"`
	Chars       int       `json:"chars"`
	ContentHash string    `json:"content_hash"`
}

type queried struct {
	Query  string `json:"query"`
	Count  int    `json:"count"`
	Chunks []struct {
		Rank       int            `json:"rank"`
		Score      float64        `json:"score"`
		ChunkID    uuid.UUID      `json:"chunk_id"`
		DocumentID uuid.UUID      `json:"document_id"`
		Collection string         `json:"collection"`
		Source     string         `json:"source"`
		Title      string         `json:"title"`
		Metadata   map[string]any `json:"metadata"`
		Ordinal    int            `json:"ordinal"`
		Context    string         `json:"context"`
		Text       string         `json:"text"`
		Snippet    string         `json:"snippet"`
		Match      struct {
			Coverage   float64 `json:"coverage"`
			Similarity float64 `json:"similarity"`
			Density    float64 `json:"density"`
		} `json:"match"`
	} `json:"chunks"`
}

func ingest(t *testing.T, ctx context.Context, b *testBundle, input map[string]any) (ingested, *registry.Receipt) {
	t.Helper()
	var d ingested
	r := b.succeed(t, ctx, "lore.ingest", jsonString(t, input), &d)
	return d, r
}

func query(t *testing.T, ctx context.Context, b *testBundle, input map[string]any) queried {
	t.Helper()
	var q queried
	r := b.succeed(t, ctx, "lore.query", jsonString(t, input), &q)
	require.Empty(t, r.Effects.DBWrites, "a query only reads")
	require.Equal(t, len(q.Chunks), q.Count)
	for i, c := range q.Chunks {
		require.Equal(t, i+1, c.Rank)
		if i > 0 {
			require.GreaterOrEqual(t, q.Chunks[i-1].Score, c.Score, "best first")
		}
	}
	return q
}

func TestLoreIngestQuery(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})

	// The input brain lore ingest sends: a file's path, title and text.
	dragons, r := ingest(t, ctx, b, map[string]any{
		"source": "lore/dragons.md", "text": dragonsMD, "metadata": map[string]any{"author": "the archivist"},
	})
	require.Equal(t, "created", dragons.Status)
	require.Equal(t, "Dragons of the North", dragons.Title, "the first heading is the title")
	require.Equal(t, "default", dragons.Collection)
	require.Equal(t, 1, dragons.Version)
	require.Equal(t, 3, dragons.ChunkCount)
	require.Len(t, dragons.ContentHash, 64)
	require.Equal(t, map[string]int{"lore_documents insert": 1, "lore_chunks insert": 3}, writes(r))
	require.Equal(t, "created", r.Summary["result.status"])
	guilds, _ := ingest(t, ctx, b, map[string]any{"source": "lore/guilds.txt", "title": "Guilds", "text": guildsMD, "collection": "economy"})
	require.Equal(t, 2, guilds.ChunkCount)
	require.Equal(t, 5, b.count(t, ctx, `SELECT count(*) FROM lore_chunks`))

	// Full-text: the chunk with the words ranks first, with its document and a highlighted snippet.
	q := query(t, ctx, b, map[string]any{"query": "where does the dragon guard its gold?"})
	require.NotEmpty(t, q.Chunks)
	top := q.Chunks[0]
	require.Equal(t, dragons.DocumentID, top.DocumentID)
	require.Equal(t, "lore/dragons.md", top.Source)
	require.Equal(t, "Dragons of the North", top.Title)
	require.Equal(t, "Dragons of the North > Habitat", top.Context)
	require.Equal(t, map[string]any{"author": "the archivist"}, top.Metadata)
	require.Equal(t, 1, top.Ordinal)
	require.Contains(t, top.Text, "Vyrmathrax sleeps under the Ember Mountain")
	require.Contains(t, top.Snippet, "«gold»")
	require.Equal(t, 1.0, top.Match.Coverage, "dragon, guard and gold are all in the chunk")
	require.Greater(t, top.Score, 0.5)
	for _, c := range q.Chunks {
		require.NotEqual(t, "lore/guilds.txt", c.Source, "the guild text shares no word with the query")
	}

	// Trigram: misspelled words find their chunk, which full-text search alone would not.
	q = query(t, ctx, b, map[string]any{"query": "necromancr Othrik"})
	require.NotEmpty(t, q.Chunks)
	require.Equal(t, "Guilds > Merchant Guilds > The Necromancer's Debt", q.Chunks[0].Context, "the title given, then the headings")
	require.Zero(t, q.Chunks[0].Match.Coverage, "no word matches exactly")
	require.Greater(t, q.Chunks[0].Match.Similarity, 0.5)
	q = query(t, ctx, b, map[string]any{"query": "Vyrmatrax"})
	require.NotEmpty(t, q.Chunks)
	require.Contains(t, q.Chunks[0].Text, "Vyrmathrax")

	// Threshold: a strict min_score leaves out what the default lets through.
	loose := query(t, ctx, b, map[string]any{"query": "dragon", "min_score": 0})
	require.Len(t, loose.Chunks, 3, "every dragons chunk mentions dragons (or is under its title)")
	strict := query(t, ctx, b, map[string]any{"query": "dragon", "min_score": 0.9})
	require.Less(t, len(strict.Chunks), len(loose.Chunks))
	for _, c := range strict.Chunks {
		require.GreaterOrEqual(t, c.Score, 0.9)
	}
	require.Empty(t, query(t, ctx, b, map[string]any{"query": "necromancr", "min_score": 0.5}).Chunks, "fuzzy-only matches score low")
	require.Empty(t, query(t, ctx, b, map[string]any{"query": "spaceship laser"}).Chunks)

	// Count: limit bounds the chunks returned.
	require.Len(t, query(t, ctx, b, map[string]any{"query": "dragon", "min_score": 0, "limit": 2}).Chunks, 2)

	// Collections.
	q = query(t, ctx, b, map[string]any{"query": "guild tax", "collection": "economy"})
	require.NotEmpty(t, q.Chunks)
	require.Equal(t, "economy", q.Chunks[0].Collection)
	require.Empty(t, query(t, ctx, b, map[string]any{"query": "guild tax", "collection": "default"}).Chunks)
}

func TestLoreReingest(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})

	input := map[string]any{"source": "lore/dragons.md", "title": "Dragons", "text": dragonsMD}
	first, _ := ingest(t, ctx, b, input)

	// The same source and content again: nothing changes, nothing is written.
	again, r := ingest(t, ctx, b, input)
	require.Equal(t, "unchanged", again.Status)
	require.Equal(t, first.DocumentID, again.DocumentID)
	require.Equal(t, 1, again.Version)
	require.Empty(t, r.Effects.DBWrites)

	// Changed text: the document keeps its id and its chunks are replaced.
	input["text"] = "# Dragons\n\nThe last dragon left for the western isles in the year of ash."
	replaced, r := ingest(t, ctx, b, input)
	require.Equal(t, "replaced", replaced.Status)
	require.Equal(t, first.DocumentID, replaced.DocumentID)
	require.Equal(t, 2, replaced.Version)
	require.Equal(t, 1, replaced.ChunkCount)
	require.Equal(t, map[string]int{"lore_documents update": 1, "lore_chunks delete": 3, "lore_chunks insert": 1}, writes(r))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM lore_documents`))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM lore_chunks`))
	require.Empty(t, query(t, ctx, b, map[string]any{"query": "Vyrmathrax hoard"}).Chunks, "the old text is gone")
	require.Equal(t, "lore/dragons.md", query(t, ctx, b, map[string]any{"query": "western isles"}).Chunks[0].Source)

	// Other chunking options re-chunk the same text.
	input["chunk_chars"], input["overlap_chars"] = 200, 0
	rechunked, _ := ingest(t, ctx, b, input)
	require.Equal(t, "replaced", rechunked.Status)
	require.Equal(t, 3, rechunked.Version)

	// The same source in another collection is another document.
	input["collection"] = "drafts"
	other, _ := ingest(t, ctx, b, input)
	require.Equal(t, "created", other.Status)
	require.NotEqual(t, first.DocumentID, other.DocumentID)

	// An emptied file keeps its document with no chunks.
	input["text"] = ""
	emptied, _ := ingest(t, ctx, b, input)
	require.Equal(t, "replaced", emptied.Status)
	require.Zero(t, emptied.ChunkCount)
	require.Equal(t, "Dragons", emptied.Title)

	// Overlap over half the chunk size is refused.
	r = b.call(t, ctx, "lore.ingest", `{"source": "x.md", "text": "x", "chunk_chars": 400, "overlap_chars": 300}`)
	requireFailed(t, r, registry.StatusFailed, registry.CodeValidation)
	require.Contains(t, r.Error.Message, "overlap_chars")
}
