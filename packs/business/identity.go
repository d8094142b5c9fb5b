package businesspack

// The identity tools: the brain's self model, its memories and boundaries.
const (
	GetSelfModel    = "identity.get_self_model"
	UpdateSelfModel = "identity.update_self_model"
	AddMemory       = "identity.add_memory"
	ExpireMemory    = "identity.expire_memory"
	ListMemories    = "identity.list_memories"
	ScorePattern    = "identity.score_pattern"
	SetBoundaries   = "identity.set_boundaries"
)

// IdentityTools are the identity tools, in the registry's order.
var IdentityTools = []string{GetSelfModel, UpdateSelfModel, AddMemory, ExpireMemory, ListMemories, ScorePattern, SetBoundaries}

// Memory types (identity.add_memory's enum).
const (
	MemoryPreference = "preference"
	MemoryFact       = "fact"
	MemoryBoundary   = "boundary"
	MemoryCommitment = "commitment"
	MemoryPattern    = "pattern"
)

// Where a memory came from (identity.add_memory's source enum).
const (
	MemoryFromUser     = "user"
	MemoryFromInferred = "inferred"
	MemoryFromImported = "imported"
	MemoryFromAdmin    = "admin"
)

// IdentityAddMemoryInput is identity.add_memory's input.
type IdentityAddMemoryInput struct {
	MemoryType string `json:"memory_type"`
	Key        string `json:"key"`
	// Value is what to remember, as an object ({"text": "…"} for what a person said).
	Value      map[string]any `json:"value"`
	Confidence *float64       `json:"confidence,omitempty"`
	Source     string         `json:"source,omitempty"`
}

// ListMemoriesInput is identity.list_memories's input.
type ListMemoriesInput struct {
	// MemoryType is preference, fact, boundary, commitment or pattern.
	MemoryType     string `json:"memory_type,omitempty"`
	KeyPrefix      string `json:"key_prefix,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	IncludeExpired bool   `json:"include_expired,omitempty"`
}
