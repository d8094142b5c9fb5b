package agentskillshandlers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/jackc/pgx/v5"
)

// Memory ranking. With a query, memories must match it (a shared word, or a trigram word similarity of at
// least memorySimilarityFloor) and
//
//	relevance = 0.6 * coverage + 0.4 * similarity
//	score     = 0.7 * relevance + 0.2 * recency + 0.1 * importance
//
// Without a query, score = recency. recency = 0.5 ^ (hours since the memory was last stored / half life).
const (
	memorySimilarityFloor  = 0.3
	defaultHalfLifeHours   = 168.0
	defaultRecallLimit     = 10
	defaultImportance      = 0.5
	agentInputHint         = `pass "agent" in the input, or make the call for an agent (core_tool_calls.agent)`
	memoryColumns          = `id, agent, user_id, kind, content, tags, importance, created_at, updated_at`
	memoryColumnsQualified = `m.id, m.agent, m.user_id, m.kind, m.content, m.tags, m.importance, m.created_at, m.updated_at`
)

// memoryTargets are where memoryColumns scan to.
func memoryTargets(m *agentskillspack.Memory) []any {
	return []any{&m.MemoryID, &m.Agent, &m.UserID, &m.Kind, &m.Content, &m.Tags, &m.Importance, &m.CreatedAt, &m.UpdatedAt}
}

// resolveAgent is the agent whose memories a call reads or writes: the input's, else the call's. A call made
// for an agent may only touch that agent's memories.
func resolveAgent(c *executor.Call, input string) (string, error) {
	input = strings.TrimSpace(input)
	switch {
	case input == "" && c.Agent == "":
		return "", executor.Invalid("%s needs an agent: %s", c.Tool.Name, agentInputHint)
	case input == "":
		return c.Agent, nil
	case c.Agent != "" && input != c.Agent:
		return "", executor.Invalid("the call is made for agent %q and cannot use the memories of agent %q", c.Agent, input)
	}
	return input, nil
}

// normalizeTags lowercases, trims, drops empty and repeated tags, and sorts them.
func normalizeTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// storeMemory saves a memory. Storing the same content again (ignoring case and runs of white space) for the
// same agent, user and kind updates the memory instead of adding one: its tags become the union, its
// importance the greater, and its updated_at now (which makes it recent again).
func (p *pack) storeMemory(ctx context.Context, c *executor.Call, in agentskillspack.StoreMemoryInput) (*agentskillspack.StoreMemoryOutput, error) {
	agent, err := resolveAgent(c, in.Agent)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Content) == "" {
		return nil, executor.Invalid("content is blank")
	}
	if in.Kind == "" {
		in.Kind = agentskillspack.DefaultMemoryKind
	}
	importance := defaultImportance
	if in.Importance != nil {
		importance = *in.Importance
	}
	var out agentskillspack.StoreMemoryOutput
	err = c.DB.QueryRow(ctx, `INSERT INTO agent_memories (agent, user_id, kind, content, tags, importance)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (agent, user_id, kind, content_key) DO UPDATE SET
			tags = ARRAY(SELECT DISTINCT t FROM unnest(agent_memories.tags || EXCLUDED.tags) AS t ORDER BY t),
			importance = greatest(agent_memories.importance, EXCLUDED.importance),
			updated_at = now()
		RETURNING `+memoryColumns+`, (xmax = 0)`,
		agent, in.UserID, in.Kind, strings.TrimSpace(in.Content), normalizeTags(in.Tags), importance).
		Scan(append(memoryTargets(&out.Memory), &out.Created)...)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// recallMemories returns an agent's memories of a user: the most recent, or those matching a query, best
// first.
func (p *pack) recallMemories(ctx context.Context, c *executor.Call, in agentskillspack.RecallMemoriesInput) (*agentskillspack.RecallMemoriesOutput, error) {
	agent, err := resolveAgent(c, in.Agent)
	if err != nil {
		return nil, err
	}
	query := strings.TrimSpace(in.Query)
	if in.Order == "" {
		in.Order = agentskillspack.OrderRecency
		if query != "" {
			in.Order = agentskillspack.OrderRelevance
		}
	}
	if in.Limit <= 0 {
		in.Limit = defaultRecallLimit
	}
	if in.HalfLifeHours <= 0 {
		in.HalfLifeHours = defaultHalfLifeHours
	}

	rows, err := c.DB.Query(ctx, `
		WITH q AS (SELECT gem_search_any($3) AS any_word, gem_search_terms($3) AS terms),
		m AS (
			SELECT `+memoryColumnsQualified+`,
				CASE WHEN $3 = '' THEN NULL
					ELSE 0.6 * gem_search_coverage(m.tsv, q.terms) + 0.4 * word_similarity($3, m.content) END AS relevance,
				power(0.5, greatest(extract(epoch FROM now() - m.updated_at), 0) / 3600.0 / $7::float8) AS recency,
				$3 = '' OR m.tsv @@ q.any_word OR word_similarity($3, m.content) >= $8 AS matches
			FROM agent_memories m CROSS JOIN q
			WHERE m.agent = $1 AND m.user_id = $2 AND ($4 = '' OR m.kind = $4) AND m.tags @> $5::text[]
		)
		SELECT `+memoryColumns+`,
			CASE WHEN relevance IS NULL THEN recency ELSE 0.7 * relevance + 0.2 * recency + 0.1 * importance END AS score,
			relevance, recency
		FROM m
		WHERE matches
		ORDER BY CASE WHEN $6 = 'recency' THEN updated_at END DESC NULLS LAST, score DESC, updated_at DESC, id
		LIMIT $9`,
		agent, in.UserID, query, in.Kind, normalizeTags(in.Tags), in.Order, in.HalfLifeHours, memorySimilarityFloor, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("error recalling memories: %w", err)
	}
	memories, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (agentskillspack.RecalledMemory, error) {
		var m agentskillspack.RecalledMemory
		err := r.Scan(append(memoryTargets(&m.Memory), &m.Score, &m.Relevance, &m.Recency)...)
		m.Score, m.Recency = round4(m.Score), round4(m.Recency)
		if m.Relevance != nil {
			v := round4(*m.Relevance)
			m.Relevance = &v
		}
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading memories: %w", err)
	}
	if memories == nil {
		memories = []agentskillspack.RecalledMemory{}
	}
	var q *string
	if query != "" {
		q = &query
	}
	return &agentskillspack.RecallMemoriesOutput{
		Agent: agent, UserID: in.UserID, Query: q, Order: in.Order, Memories: memories, Count: len(memories),
	}, nil
}
