package businesspack

// The identity tools the office's rules plan: what the brain remembers of its owner, and how it sees
// itself.
const (
	ListMemories = "identity.list_memories"
	GetSelfModel = "identity.get_self_model"
)

// ListMemoriesInput is identity.list_memories's input.
type ListMemoriesInput struct {
	// MemoryType is preference, fact, boundary, commitment or pattern.
	MemoryType     string `json:"memory_type,omitempty"`
	KeyPrefix      string `json:"key_prefix,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	IncludeExpired bool   `json:"include_expired,omitempty"`
}
