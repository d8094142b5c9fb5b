package agentskillshandlers_test

import (
	"fmt"
	"testing"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

type storedMemory struct {
	Memory struct {
		MemoryID   uuid.UUID `json:"memory_id"`
		Agent      string    `json:"agent"`
		UserID     string    `json:"user_id"`
		Kind       string    `json:"kind"`
		Content    string    `json:"content"`
		Tags       []string  `json:"tags"`
		Importance float64   `json:"importance"`
	} `json:"memory"`
	Created bool `json:"created"`
}

type recalled struct {
	Agent    string  `json:"agent"`
	UserID   string  `json:"user_id"`
	Query    *string `json:"query"`
	Order    string  `json:"order"`
	Count    int     `json:"count"`
	Memories []struct {
		MemoryID   uuid.UUID `json:"memory_id"`
		Agent      string    `json:"agent"`
		UserID     string    `json:"user_id"`
		Content    string    `json:"content"`
		Kind       string    `json:"kind"`
		Tags       []string  `json:"tags"`
		Score      float64   `json:"score"`
		Relevance  *float64  `json:"relevance"`
		Recency    float64   `json:"recency"`
		Importance float64   `json:"importance"`
	} `json:"memories"`
}

func (r recalled) contents() []string {
	out := make([]string, len(r.Memories))
	for i, m := range r.Memories {
		out[i] = m.Content
	}
	return out
}

// store stores a memory for npc-mira (or the agent given in input) and returns it; calls run one after
// another, so each memory is more recent than the one before.
func store(t *testing.T, b *testBundle, input string) storedMemory {
	t.Helper()
	var m storedMemory
	b.succeed(t, t.Context(), "memory.store", input, &m)
	return m
}

func TestMemoryStoreRecallByRecency(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})

	first := store(t, b, `{"agent": "npc-mira", "user_id": "u1", "content": "The player gave Mira a silver ring.", "kind": "event", "tags": ["Gift", "ring"], "importance": 0.9}`)
	require.True(t, first.Created)
	require.Equal(t, "npc-mira", first.Memory.Agent)
	require.Equal(t, "event", first.Memory.Kind)
	require.Equal(t, []string{"gift", "ring"}, first.Memory.Tags, "tags are lowercased and sorted")
	require.Equal(t, 0.9, first.Memory.Importance)
	store(t, b, `{"agent": "npc-mira", "user_id": "u1", "content": "The player prefers to be called Ash."}`)
	last := store(t, b, `{"agent": "npc-mira", "user_id": "u1", "content": "The player asked about the northern pass."}`)

	var got recalled
	r := b.succeed(t, ctx, "memory.recall", `{"agent": "npc-mira", "user_id": "u1"}`, &got)
	require.Equal(t, "recency", got.Order)
	require.Nil(t, got.Query)
	require.Equal(t, []string{
		"The player asked about the northern pass.",
		"The player prefers to be called Ash.",
		"The player gave Mira a silver ring.",
	}, got.contents(), "newest first")
	require.Equal(t, 3, got.Count)
	require.Equal(t, last.Memory.MemoryID, got.Memories[0].MemoryID)
	for i, m := range got.Memories {
		require.Nil(t, m.Relevance, "no query, no relevance")
		require.InDelta(t, 1, m.Recency, 0.01, "stored moments ago")
		require.Equal(t, m.Recency, m.Score)
		if i > 0 {
			require.GreaterOrEqual(t, got.Memories[i-1].Recency, m.Recency)
		}
	}
	require.Equal(t, "note", got.Memories[0].Kind, "the default kind")
	require.Empty(t, r.Effects.DBWrites, "recall only reads")

	b.succeed(t, ctx, "memory.recall", `{"agent": "npc-mira", "user_id": "u1", "limit": 2}`, &got)
	require.Equal(t, []string{"The player asked about the northern pass.", "The player prefers to be called Ash."}, got.contents())

	b.succeed(t, ctx, "memory.recall", `{"agent": "npc-mira", "user_id": "u1", "kind": "event"}`, &got)
	require.Equal(t, []string{"The player gave Mira a silver ring."}, got.contents())
	b.succeed(t, ctx, "memory.recall", `{"agent": "npc-mira", "user_id": "u1", "tags": ["RING"]}`, &got)
	require.Equal(t, []string{"The player gave Mira a silver ring."}, got.contents())
	b.succeed(t, ctx, "memory.recall", `{"agent": "npc-mira", "user_id": "u1", "tags": ["ring", "cursed"]}`, &got)
	require.Empty(t, got.Memories, "every tag must match")

	// The receipt of a store lists the memory written.
	r = b.call(t, ctx, "memory.store", `{"agent": "npc-mira", "user_id": "u1", "content": "Ash is afraid of spiders."}`)
	var m storedMemory
	requireSucceeded(t, r, &m)
	require.Equal(t, []registry.DBWrite{{Table: "agent_memories", Op: "insert", Count: 1, IDs: []string{m.Memory.MemoryID.String()}}}, r.Effects.DBWrites)
	require.Equal(t, m.Memory.MemoryID.String(), r.Summary["result.memory.memory_id"])
}

func TestMemoryRecallByText(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})

	for _, content := range []string{
		"Ash drinks green tea every morning.",
		"Ash has a dog named Biscuit who hates thunderstorms.",
		"Ash works as a blacksmith in Riverton.",
		"Ash once sold a sword to the Duke of Riverton.",
	} {
		store(t, b, jsonString(t, map[string]any{"agent": "npc-mira", "user_id": "u1", "content": content}))
	}
	recall := func(input string) recalled {
		t.Helper()
		var got recalled
		b.succeed(t, ctx, "memory.recall", input, &got)
		return got
	}

	// Full-text: stemmed words match ("drinking" finds "drinks").
	got := recall(`{"agent": "npc-mira", "user_id": "u1", "query": "drinking tea"}`)
	require.Equal(t, "relevance", got.Order)
	require.Equal(t, "drinking tea", *got.Query)
	require.Equal(t, []string{"Ash drinks green tea every morning."}, got.contents())
	require.NotNil(t, got.Memories[0].Relevance)
	require.Greater(t, *got.Memories[0].Relevance, 0.6)

	// Both Riverton memories match; the one that matches more of the query ranks first.
	got = recall(`{"agent": "npc-mira", "user_id": "u1", "query": "blacksmith Riverton"}`)
	require.Equal(t, []string{"Ash works as a blacksmith in Riverton.", "Ash once sold a sword to the Duke of Riverton."}, got.contents())
	require.Greater(t, got.Memories[0].Score, got.Memories[1].Score)

	// Trigram: a misspelled name still finds its memory.
	got = recall(`{"agent": "npc-mira", "user_id": "u1", "query": "Biscut"}`)
	require.Equal(t, []string{"Ash has a dog named Biscuit who hates thunderstorms."}, got.contents())
	require.Greater(t, *got.Memories[0].Relevance, 0.0)

	// Nothing related: nothing returned.
	require.Empty(t, recall(`{"agent": "npc-mira", "user_id": "u1", "query": "spaceship"}`).Memories)

	// Order recency lists the matches newest first.
	got = recall(`{"agent": "npc-mira", "user_id": "u1", "query": "Riverton", "order": "recency"}`)
	require.Equal(t, []string{"Ash once sold a sword to the Duke of Riverton.", "Ash works as a blacksmith in Riverton."}, got.contents())

	// Limit.
	require.Len(t, recall(`{"agent": "npc-mira", "user_id": "u1", "query": "Ash", "limit": 3}`).Memories, 3)
}

func TestMemoryIsolation(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})

	for _, who := range []struct{ agent, user string }{{"npc-mira", "u1"}, {"npc-mira", "u2"}, {"npc-bob", "u1"}} {
		store(t, b, jsonString(t, map[string]any{
			"agent": who.agent, "user_id": who.user, "content": fmt.Sprintf("secret of %s about %s: the key is under the mat", who.agent, who.user),
		}))
	}
	for _, who := range []struct{ agent, user string }{{"npc-mira", "u1"}, {"npc-mira", "u2"}, {"npc-bob", "u1"}} {
		for _, query := range []string{"", "secret key mat"} {
			var got recalled
			b.succeed(t, ctx, "memory.recall", jsonString(t, map[string]any{"agent": who.agent, "user_id": who.user, "query": query}), &got)
			require.Equal(t, []string{fmt.Sprintf("secret of %s about %s: the key is under the mat", who.agent, who.user)}, got.contents(),
				"%s sees only its own memories of %s (query %q)", who.agent, who.user, query)
			require.Equal(t, who.agent, got.Agent)
			require.Equal(t, who.user, got.UserID)
		}
	}

	// A call made for an agent (given the built-in memory skill) uses that agent's memories when the input
	// names none...
	_, err := b.pool.Exec(ctx, `
		INSERT INTO agents (slug, name) VALUES ('npc-bob', 'Bob');
		INSERT INTO agent_skills (agent_id, skill_id) SELECT a.id, s.id FROM agents a, skills s WHERE a.slug = 'npc-bob' AND s.slug = 'memory'`)
	require.NoError(t, err)
	var got recalled
	requireSucceeded(t, b.callFor(t, ctx, "npc-bob", "memory.recall", `{"user_id": "u1"}`), &got)
	require.Equal(t, "npc-bob", got.Agent)
	require.Equal(t, []string{"secret of npc-bob about u1: the key is under the mat"}, got.contents())
	var m storedMemory
	requireSucceeded(t, b.callFor(t, ctx, "npc-bob", "memory.store", `{"user_id": "u1", "content": "u1 is kind."}`), &m)
	require.Equal(t, "npc-bob", m.Memory.Agent)

	// ...and may not read or write another agent's.
	for _, tool := range []string{"memory.recall", "memory.store"} {
		r := b.callFor(t, ctx, "npc-bob", tool, `{"agent": "npc-mira", "user_id": "u1", "content": "x"}`)
		if tool == "memory.recall" {
			r = b.callFor(t, ctx, "npc-bob", tool, `{"agent": "npc-mira", "user_id": "u1"}`)
		}
		requireFailed(t, r, registry.StatusFailed, registry.CodeValidation)
		require.Contains(t, r.Error.Message, `cannot use the memories of agent "npc-mira"`)
	}

	// Without any agent there is nothing to remember for.
	r := b.call(t, ctx, "memory.recall", `{"user_id": "u1"}`)
	requireFailed(t, r, registry.StatusFailed, registry.CodeValidation)
	require.Contains(t, r.Error.Message, `pass "agent"`)
	require.Equal(t, 4, b.count(t, ctx, `SELECT count(*) FROM agent_memories`))
}

func TestMemoryStoreSameContentUpdates(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})

	first := store(t, b, `{"agent": "npc-mira", "user_id": "u1", "content": "Ash likes  green tea.", "tags": ["drink"], "importance": 0.4}`)
	store(t, b, `{"agent": "npc-mira", "user_id": "u1", "content": "Ash owns a boat."}`)

	r := b.call(t, ctx, "memory.store", `{"agent": "npc-mira", "user_id": "u1", "content": "ash likes green TEA.", "tags": ["preference", "drink"], "importance": 0.7}`)
	var again storedMemory
	requireSucceeded(t, r, &again)
	require.False(t, again.Created)
	require.Equal(t, first.Memory.MemoryID, again.Memory.MemoryID)
	require.Equal(t, "Ash likes  green tea.", again.Memory.Content, "the first wording is kept")
	require.Equal(t, []string{"drink", "preference"}, again.Memory.Tags)
	require.Equal(t, 0.7, again.Memory.Importance)
	require.Equal(t, map[string]int{"agent_memories update": 1}, writes(r))

	// Stored again, it is the most recent memory.
	var got recalled
	b.succeed(t, ctx, "memory.recall", `{"agent": "npc-mira", "user_id": "u1"}`, &got)
	require.Equal(t, []string{"Ash likes  green tea.", "Ash owns a boat."}, got.contents())

	// A lower importance does not lower it; another kind is another memory.
	b.succeed(t, ctx, "memory.store", `{"agent": "npc-mira", "user_id": "u1", "content": "Ash likes green tea.", "importance": 0.1}`, &again)
	require.Equal(t, 0.7, again.Memory.Importance)
	b.succeed(t, ctx, "memory.store", `{"agent": "npc-mira", "user_id": "u1", "content": "Ash likes green tea.", "kind": "preference"}`, &again)
	require.True(t, again.Created)
	require.Equal(t, 3, b.count(t, ctx, `SELECT count(*) FROM agent_memories`))
}
