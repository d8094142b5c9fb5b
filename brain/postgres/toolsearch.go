package postgres

import (
	"context"
	"fmt"

	"github.com/gemhq/gem/brain/llm"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/jackc/pgx/v5"
)

// ToolHit is a tool a search found, with its score (higher is better; only the order means something).
type ToolHit struct {
	Tool  *registry.Tool
	Score float64
	// Coverage is the share of the query the tool holds, from 0 to 1, comparable across queries: each concept
	// of the query weighs its rarity, and a tool holds it in its name or description (a mention among its
	// properties counts less).
	Coverage float64
}

// ToolCatalogLoad stores the search documents of tools in brain_tool_search (the brain does it at start-up;
// ToolSearch adds what is missing). Rows are keyed by their content's hash, so loading is idempotent, brains
// with other registries keep their rows, and concurrent loads do not conflict. Rows no brain has loaded for
// 30 days are pruned.
func ToolCatalogLoad(ctx context.Context, db gemsql.DBTX, tools []*registry.Tool) error {
	var keys, names, words, descriptions, properties []string
	for _, t := range tools {
		d := llm.ToolSearchDocument(t)
		keys, names, words = append(keys, d.Key), append(names, d.Name), append(words, d.NameWords)
		descriptions, properties = append(descriptions, d.Description), append(properties, d.Properties)
	}
	// Rows go in key order, so two brains loading at once lock them in the same order.
	_, err := db.Exec(ctx, `
		INSERT INTO brain_tool_search (key, name, name_words, description, properties)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) ORDER BY 1
		ON CONFLICT (key) DO UPDATE SET seen_at = now() WHERE brain_tool_search.seen_at < now() - interval '1 hour'`,
		keys, names, words, descriptions, properties)
	if err != nil {
		return fmt.Errorf("error loading the tool search catalog: %w", coded(err))
	}
	if _, err := db.Exec(ctx, `DELETE FROM brain_tool_search WHERE seen_at < now() - interval '30 days'`); err != nil {
		return fmt.Errorf("error pruning the tool search catalog: %w", coded(err))
	}
	return nil
}

// toolSearchSQL ranks the catalog rows of the given keys ($1) for a query's concepts ($2, each a
// websearch_to_tsquery text: a word or phrase of the query OR-ed with its synonyms), the words or phrases
// they came from ($3, in the same order), and the query's words ($4). A tool's score adds, per concept it
// matches, the concept's rarity (BM25's inverse document frequency) times where it matched best: in the name
// (rarity among names), the description (half) or the properties (a quarter); the same again, at half
// weight, for the person's own words; ts_rank_cd over every concept (how densely the document holds them,
// by the same field weights); and the trigram similarity of its name's words to the query's words, which
// catches misspellings. The first column is how many of the keys the catalog has, so a caller can add the
// missing rows.
const toolSearchSQL = `
WITH concept AS MATERIALIZED (
    SELECT c.ord, q.q AS q, lit.q AS lit, c.number
    FROM unnest($2::text[], $3::text[], $9::bool[]) WITH ORDINALITY AS c(text, literal, number, ord),
        websearch_to_tsquery('gem_tool_words', c.text) AS q(q), websearch_to_tsquery('gem_tool_words', c.literal) AS lit(q)
    -- A concept of stop words only counts when it is a phrase people use ("before and after").
    WHERE numnode(q.q) > 0 AND (numnode(websearch_to_tsquery('english', c.text)) > 0 OR c.text LIKE '%"%')
), anyq AS MATERIALIZED (
    SELECT coalesce((SELECT string_agg(q::text, ' | ')::tsquery FROM concept), ''::tsquery) AS q
), total AS MATERIALIZED (
    SELECT count(*)::float8 AS n FROM brain_tool_search WHERE key = ANY($1)
), cand AS MATERIALIZED (
    -- Only tools that match a concept, or whose name is close enough to the words, can score (the GIN
    -- indexes find them in a large catalog).
    SELECT t.name, t.name_words, t.document, ts_filter(t.document, '{a}') AS a, ts_filter(t.document, '{b}') AS b
    FROM brain_tool_search t, anyq
    WHERE t.key = ANY($1) AND (t.document @@ anyq.q OR word_similarity(t.name_words, $4) > $6)
), df AS MATERIALIZED (
    SELECT concept.ord, concept.q, concept.lit,
        ln(1 + (total.n - count(cand.name) + 0.5) / (count(cand.name) + 0.5)) AS idf,
        ln(1 + (total.n - count(cand.name) FILTER (WHERE cand.a @@ concept.q) + 0.5)
             / (count(cand.name) FILTER (WHERE cand.a @@ concept.q) + 0.5)) AS idf_name,
        ln(1 + (total.n - count(cand.name) FILTER (WHERE cand.document @@ concept.lit) + 0.5)
             / (count(cand.name) FILTER (WHERE cand.document @@ concept.lit) + 0.5)) AS idf_lit,
        -- What the concept weighs in coverage: nothing for a number (a value, not what to do), its rarity, or
        -- for a word no tool holds (a name, a place, a word of another world than the tools') the share $7 of
        -- the rarity of a word one tool holds, so the weights keep their proportions in a catalog of any size.
        CASE WHEN concept.number THEN 0
             WHEN count(cand.name) = 0 THEN $7::float8 * ln(1 + (total.n - 1 + 0.5) / 1.5)
             ELSE ln(1 + (total.n - count(cand.name) + 0.5) / (count(cand.name) + 0.5)) END AS w
    FROM concept CROSS JOIN total LEFT JOIN cand ON cand.document @@ concept.q
    GROUP BY concept.ord, concept.q, concept.lit, concept.number, total.n
), matched AS MATERIALIZED (
    SELECT cand.name,
        sum(CASE WHEN cand.a @@ df.q THEN df.idf_name WHEN cand.b @@ df.q THEN 0.5 * df.idf
                 WHEN cand.document @@ df.q THEN 0.25 * df.idf ELSE 0 END
            + CASE WHEN numnode(df.lit) = 0 THEN 0 WHEN cand.a @@ df.lit THEN 0.5 * df.idf_lit
                   WHEN cand.b @@ df.lit THEN 0.25 * df.idf_lit WHEN cand.document @@ df.lit THEN 0.125 * df.idf_lit ELSE 0 END) AS s,
        -- Coverage: the share of the query's weight the tool holds, a property's mention counting $8 of one
        -- in its name or description.
        sum(CASE WHEN cand.a @@ df.q OR cand.b @@ df.q THEN df.w WHEN cand.document @@ df.q THEN $8 * df.w ELSE 0 END)
            / nullif((SELECT sum(w) FROM df), 0) AS coverage
    FROM cand CROSS JOIN df
    GROUP BY cand.name
), scored AS MATERIALIZED (
    SELECT cand.name, coalesce(matched.s, 0)
        -- A tool that matches no concept ranks 0: skip the work.
        + CASE WHEN matched.s > 0 THEN ts_rank_cd('{0.1, 0.25, 0.5, 1.0}', cand.document, anyq.q, 1) ELSE 0 END
        + CASE WHEN $4 = '' THEN 0 ELSE word_similarity(cand.name_words, $4) END AS score,
        coalesce(matched.coverage, 0) AS coverage
    FROM cand CROSS JOIN anyq LEFT JOIN matched ON matched.name = cand.name
)
SELECT total.n::int, s.name, coalesce(s.score, 0), coalesce(s.coverage, 0)
FROM total LEFT JOIN LATERAL (
    SELECT name, score, coverage FROM scored WHERE score > $6 ORDER BY score DESC, name LIMIT $5
) s ON true`

// Coverage weights, chosen on the search suite's tune split (docs/tool-search.md#no-tool-fits): a word no
// tool holds weighs 0.23 of a word only one tool holds (1 among the repository's 124 tools), and only a tool's
// name and description hold a concept (its properties mention too much to say what it is for).
const (
	coverageUnknownWeight = 0.23
	coveragePropertyShare = 0.0
)

// ToolSearchMinCoverageDefault is the coverage below which the best tool does not fit the request
// (GEM_BRAIN_TOOL_SEARCH_MIN_COVERAGE), chosen on the search suite's tune split.
const ToolSearchMinCoverageDefault = 0.14

// ToolsFit reports whether a search's best tool covers at least minCoverage of the request: when it does not,
// no tool fits, and the search's users say so rather than offer the least bad tools.
func ToolsFit(hits []ToolHit, minCoverage float64) bool {
	return len(hits) > 0 && hits[0].Coverage >= minCoverage
}

// toolSearchMinScore leaves out tools that only share a few trigrams with the query.
const toolSearchMinScore = 0.35

// ToolSearch ranks tools (the registry's, or an agent's) for a query and returns the best limit of them, best
// first; tools that match nothing are left out. It is the one tool search: GET /brain/tools?q=, the LLM
// planner and agents' search_tools all use it. Tools missing from the catalog are added first.
func ToolSearch(ctx context.Context, db gemsql.DBTX, tools []*registry.Tool, query string, limit int) ([]ToolHit, error) {
	if limit <= 0 {
		limit = llm.ToolSearchLimitDefault
	}
	byName := make(map[string]*registry.Tool, len(tools))
	keys := make([]string, 0, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
		keys = append(keys, llm.ToolSearchDocument(t).Key)
	}
	q := llm.ExpandQuery(query, llm.VocabularyOf(tools))
	if len(q.Concepts) == 0 || len(tools) == 0 {
		return []ToolHit{}, nil
	}
	for attempt := 0; ; attempt++ {
		known, hits, err := toolSearchRun(ctx, db, keys, q, limit, byName)
		if err != nil {
			return nil, err
		}
		if known >= len(keys) || attempt > 0 {
			return hits, nil
		}
		// Some tools are not in the catalog yet (a registry loaded after start-up, or rows pruned while this
		// brain ran): add them and search again.
		if err := ToolCatalogLoad(ctx, db, tools); err != nil {
			return nil, err
		}
	}
}

func toolSearchRun(ctx context.Context, db gemsql.DBTX, keys []string, q llm.SearchQuery, limit int, byName map[string]*registry.Tool) (int, []ToolHit, error) {
	rows, err := db.Query(ctx, toolSearchSQL, keys, q.Concepts, q.Literals, q.Text(), limit, toolSearchMinScore, coverageUnknownWeight, coveragePropertyShare, q.Numbers)
	if err != nil {
		return 0, nil, fmt.Errorf("error searching tools: %w", coded(err))
	}
	var known int
	var name *string
	var score, coverage float64
	hits := []ToolHit{}
	_, err = pgx.ForEachRow(rows, []any{&known, &name, &score, &coverage}, func() error {
		if name == nil {
			return nil // no tool scored
		}
		if t, ok := byName[*name]; ok {
			hits = append(hits, ToolHit{Tool: t, Score: score, Coverage: coverage})
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("error searching tools: %w", coded(err))
	}
	return known, hits, nil
}
