package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Limits bound the calls of one tool (docs/governance.md). A zero field means the executor's default.
type Limits struct {
	// MaxInputBytes bounds a call's input (its JSON text): a larger input is refused input_too_large before
	// it reaches the executor's memory.
	MaxInputBytes int64 `json:"max_input_bytes,omitempty"`
	// MaxResultBytes bounds the handler's result: a larger one fails its call result_too_large, with its
	// effects rolled back.
	MaxResultBytes int64 `json:"max_result_bytes,omitempty"`
}

// The range a size limit may take.
const (
	SizeLimitMin = 1 << 10   // 1 KiB
	SizeLimitMax = 256 << 20 // 256 MiB
)

// MaxInput is the tool's input bound, or def when the tool sets none.
func (t *Tool) MaxInput(def int64) int64 {
	if t.Limits != nil && t.Limits.MaxInputBytes > 0 {
		return t.Limits.MaxInputBytes
	}
	return def
}

// MaxResult is the tool's result bound, or def when the tool sets none.
func (t *Tool) MaxResult(def int64) int64 {
	if t.Limits != nil && t.Limits.MaxResultBytes > 0 {
		return t.Limits.MaxResultBytes
	}
	return def
}

func (c *checker) checkLimits(label string, fields map[string]json.RawMessage, t *Tool) {
	raw, ok := fields["limits"]
	if !ok || string(raw) == "null" {
		return
	}
	var l Limits
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		c.add(label, "limits", "must be an object with max_input_bytes and max_result_bytes (whole numbers of bytes): "+err.Error())
		return
	}
	for name, v := range map[string]int64{"max_input_bytes": l.MaxInputBytes, "max_result_bytes": l.MaxResultBytes} {
		if v != 0 && (v < SizeLimitMin || v > SizeLimitMax) {
			c.add(label, "limits."+name, fmt.Sprintf("is %d, outside the allowed %d..%d", v, SizeLimitMin, SizeLimitMax))
		}
	}
	t.Limits = &l
}

// Approval says whether a tool's calls wait for a person's decision (docs/governance.md#approvals).
type Approval struct {
	Required bool `json:"required"`
	// ExpiresAfterMS is how long a call may wait for its decision before it ends approval_expired. Zero
	// means ApprovalExpiryDefault.
	ExpiresAfterMS int64 `json:"expires_after_ms,omitempty"`
}

// ApprovalExpiryDefault is how long a call waits for a decision when its tool or policy says nothing, and
// the range an expiry may take.
const (
	ApprovalExpiryDefault = 24 * time.Hour
	ApprovalExpiryMin     = time.Second
	ApprovalExpiryMax     = 30 * 24 * time.Hour
)

// ApprovalRequired reports whether every call of the tool needs approval, and how long it may wait.
func (t *Tool) ApprovalRequired() (bool, time.Duration) {
	if t.Approval == nil || !t.Approval.Required {
		return false, 0
	}
	if t.Approval.ExpiresAfterMS == 0 {
		return true, ApprovalExpiryDefault
	}
	return true, time.Duration(t.Approval.ExpiresAfterMS) * time.Millisecond
}

func (c *checker) checkApproval(label string, fields map[string]json.RawMessage, t *Tool) {
	raw, ok := fields["approval"]
	if !ok || string(raw) == "null" {
		return
	}
	var a Approval
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		c.add(label, "approval", `must be an object like {"required": true, "expires_after_ms": 86400000}: `+err.Error())
		return
	}
	if d := time.Duration(a.ExpiresAfterMS) * time.Millisecond; a.ExpiresAfterMS != 0 && (d < ApprovalExpiryMin || d > ApprovalExpiryMax) {
		c.add(label, "approval.expires_after_ms", fmt.Sprintf("is %d, outside the allowed %d..%d", a.ExpiresAfterMS,
			ApprovalExpiryMin.Milliseconds(), ApprovalExpiryMax.Milliseconds()))
	}
	t.Approval = &a
}
