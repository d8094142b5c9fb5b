package businesspack

import "time"

// The personal tools: check-ins, commitments, decisions and boundaries.
const (
	CheckIn           = "personal.check_in"
	CreateCommitment  = "personal.create_commitment"
	ReviewCommitments = "personal.review_commitments"
	CloseCommitment   = "personal.close_commitment"
	DecisionSupport   = "personal.decision_support"
	BoundarySet       = "personal.boundary_set"
)

// Levels of energy and stress, and of focus (personal.check_in's).
const (
	LevelLow    = "low"
	LevelMedium = "medium"
	LevelHigh   = "high"

	FocusScattered = "scattered"
	FocusOK        = "ok"
	FocusLockedIn  = "locked_in"
)

// Commitments personal.review_commitments lists.
const (
	CommitmentsActive = "active"
	CommitmentsClosed = "closed"
	CommitmentsAll    = "all"
)

// CheckInInput is personal.check_in's input.
type CheckInInput struct {
	Energy string `json:"energy"`
	Stress string `json:"stress"`
	Focus  string `json:"focus"`
	Notes  string `json:"notes,omitempty"`
}

// CreateCommitmentInput is personal.create_commitment's input.
type CreateCommitmentInput struct {
	Title    string     `json:"title"`
	Details  string     `json:"details,omitempty"`
	ReviewAt *time.Time `json:"review_at,omitempty"`
}

// ReviewCommitmentsInput is personal.review_commitments's input.
type ReviewCommitmentsInput struct {
	Status string `json:"status,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// DecisionSupportInput is personal.decision_support's input.
type DecisionSupportInput struct {
	Decision string   `json:"decision"`
	Options  []string `json:"options,omitempty"`
	// Constraints are what the choice must respect, by name: a number is a limit, true a must, false
	// something to avoid, text a requirement, a list the allowed values.
	Constraints map[string]any `json:"constraints,omitempty"`
}

// Boundary is a boundary said in words; personal.boundary_set keeps any object, and this is the one people
// say ("none after 6pm").
type Boundary struct {
	Rule string `json:"rule"`
}

// BoundarySetInput is personal.boundary_set's input.
type BoundarySetInput struct {
	Key      string     `json:"key"`
	Value    Boundary   `json:"value"`
	RemindAt *time.Time `json:"remind_at,omitempty"`
}

// PersonalTools are the personal tools, in the registry's order.
var PersonalTools = []string{CheckIn, CreateCommitment, ReviewCommitments, CloseCommitment, DecisionSupport, BoundarySet}
