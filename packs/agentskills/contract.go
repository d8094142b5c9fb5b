package agentskillspack

import (
	"encoding/json"
	"time"
)

// The tools' inputs and results, as their registry entries declare them (tools/*.json): the handlers decode
// the inputs and return the results; a rule or a sentence would build and read the same types. A field the
// entry leaves optional is omitted from an input when empty. The results' fields are in the order the
// tools have always written them (a result that was a map has its keys in name order), so a receipt's
// result is the same, byte for byte.

// Memory kinds and recall orders.
const (
	// DefaultMemoryKind is a memory's kind when memory.store's input gives none.
	DefaultMemoryKind = "note"
	// OrderRelevance ranks recalled memories by how well they match the query (the default with a query).
	OrderRelevance = "relevance"
	// OrderRecency ranks recalled memories by when they were last stored (the default without a query).
	OrderRecency = "recency"
)

// What lore.ingest did with a document (LoreDocument.Status).
const (
	IngestCreated   = "created"
	IngestReplaced  = "replaced"
	IngestUnchanged = "unchanged"
)

// Sentiment labels (Sentiment.Label).
const (
	SentimentPositive = "positive"
	SentimentNeutral  = "neutral"
	SentimentNegative = "negative"
)

// StoreMemoryInput is memory.store's input. The agent is the call's when Agent is empty.
type StoreMemoryInput struct {
	Agent      string   `json:"agent,omitempty"`
	UserID     string   `json:"user_id"`
	Content    string   `json:"content"`
	Kind       string   `json:"kind,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Importance *float64 `json:"importance,omitempty"`
}

// Memory is a memory as memory.store and memory.recall return it.
type Memory struct {
	MemoryID   string    `json:"memory_id"`
	Agent      string    `json:"agent"`
	UserID     string    `json:"user_id"`
	Kind       string    `json:"kind"`
	Content    string    `json:"content"`
	Tags       []string  `json:"tags"`
	Importance float64   `json:"importance"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// StoreMemoryOutput is memory.store's result. Created is false when the memory was stored before and is
// updated instead.
type StoreMemoryOutput struct {
	Created bool   `json:"created"`
	Memory  Memory `json:"memory"`
}

// RecallMemoriesInput is memory.recall's input. The agent is the call's when Agent is empty.
type RecallMemoriesInput struct {
	Agent         string   `json:"agent,omitempty"`
	UserID        string   `json:"user_id"`
	Query         string   `json:"query,omitempty"`
	Kind          string   `json:"kind,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	Order         string   `json:"order,omitempty"`
	Limit         int      `json:"limit,omitempty"`
	HalfLifeHours float64  `json:"half_life_hours,omitempty"`
}

// RecalledMemory is a memory with its ranking. Relevance is null without a query.
type RecalledMemory struct {
	Memory
	Score     float64  `json:"score"`
	Relevance *float64 `json:"relevance"`
	Recency   float64  `json:"recency"`
}

// RecallMemoriesOutput is memory.recall's result. Query is null when the input gave none.
type RecallMemoriesOutput struct {
	Agent    string           `json:"agent"`
	Count    int              `json:"count"`
	Memories []RecalledMemory `json:"memories"`
	Order    string           `json:"order"`
	Query    *string          `json:"query"`
	UserID   string           `json:"user_id"`
}

// IngestLoreInput is lore.ingest's input.
type IngestLoreInput struct {
	Source       string          `json:"source"`
	Title        string          `json:"title,omitempty"`
	Text         string          `json:"text"`
	Collection   string          `json:"collection,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	ChunkChars   *int            `json:"chunk_chars,omitempty"`
	OverlapChars *int            `json:"overlap_chars,omitempty"`
}

// LoreDocument is lore.ingest's result: the document as stored, and what the call did (Status: IngestCreated,
// IngestReplaced or IngestUnchanged).
type LoreDocument struct {
	DocumentID  string    `json:"document_id"`
	Collection  string    `json:"collection"`
	Source      string    `json:"source"`
	Title       string    `json:"title"`
	Status      string    `json:"status"`
	Version     int       `json:"version"`
	ChunkCount  int       `json:"chunk_count"`
	Chars       int       `json:"chars"`
	ContentHash string    `json:"content_hash"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// QueryLoreInput is lore.query's input. A nil Collection searches every collection.
type QueryLoreInput struct {
	Query      string   `json:"query"`
	Collection *string  `json:"collection,omitempty"`
	Limit      int      `json:"limit,omitempty"`
	MinScore   *float64 `json:"min_score,omitempty"`
}

// LoreHit is one chunk lore.query found.
type LoreHit struct {
	Rank       int             `json:"rank"`
	Score      float64         `json:"score"`
	ChunkID    string          `json:"chunk_id"`
	DocumentID string          `json:"document_id"`
	Collection string          `json:"collection"`
	Source     string          `json:"source"`
	Title      string          `json:"title"`
	Metadata   json.RawMessage `json:"metadata"`
	Ordinal    int             `json:"ordinal"`
	Context    string          `json:"context"`
	Text       string          `json:"text"`
	Snippet    string          `json:"snippet"`
	Match      LoreMatch       `json:"match"`
}

// LoreMatch is a hit's score broken down (see gem_lore_search).
type LoreMatch struct {
	Coverage   float64 `json:"coverage"`
	Similarity float64 `json:"similarity"`
	Density    float64 `json:"density"`
}

// QueryLoreOutput is lore.query's result, best chunk first.
type QueryLoreOutput struct {
	Chunks []LoreHit `json:"chunks"`
	Count  int       `json:"count"`
	Query  string    `json:"query"`
}

// AnalyzeSentimentInput is sentiment.analyze's input.
type AnalyzeSentimentInput struct {
	Text    string `json:"text"`
	Context string `json:"context,omitempty"`
}

// Sentiment is sentiment.analyze's result.
type Sentiment struct {
	Label     string   `json:"label"`
	Score     float64  `json:"score"`
	Emotions  []string `json:"emotions"`
	Rationale string   `json:"rationale"`
	Provider  string   `json:"provider"`
	Model     string   `json:"model"`
}

// SearchWebInput is web.search's input.
type SearchWebInput struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results,omitempty"`
}

// WebResult is one search result.
type WebResult struct {
	Title     string   `json:"title"`
	URL       string   `json:"url"`
	Snippet   string   `json:"snippet"`
	Score     *float64 `json:"score"`
	Published *string  `json:"published"`
}

// SearchWebOutput is web.search's result. Answer is the provider's own answer, when it gives one.
type SearchWebOutput struct {
	Answer   *string     `json:"answer"`
	Count    int         `json:"count"`
	Provider string      `json:"provider"`
	Query    string      `json:"query"`
	Results  []WebResult `json:"results"`
}

// GenerateImageInput is image.generate's input.
type GenerateImageInput struct {
	RequestID string `json:"request_id"`
	Prompt    string `json:"prompt"`
	Size      string `json:"size,omitempty"`
	Quality   string `json:"quality,omitempty"`
	N         int    `json:"n,omitempty"`
}

// GeneratedImage is one image in image.generate's result: its bytes are kept (MIMEType, Bytes, SHA256) or
// the provider's link is (URL).
type GeneratedImage struct {
	ImageID       string  `json:"image_id"`
	Ordinal       int     `json:"ordinal"`
	MIMEType      *string `json:"mime_type"`
	Bytes         *int    `json:"bytes"`
	SHA256        *string `json:"sha256"`
	URL           *string `json:"url"`
	RevisedPrompt *string `json:"revised_prompt"`
}

// GenerateImageOutput is image.generate's result.
type GenerateImageOutput struct {
	Count     int              `json:"count"`
	Images    []GeneratedImage `json:"images"`
	Model     string           `json:"model"`
	RequestID string           `json:"request_id"`
}
