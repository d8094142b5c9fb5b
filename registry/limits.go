package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
	// Concurrency bounds how many of the tool's calls run at once, across every executor.
	Concurrency *ConcurrencyLimit `json:"concurrency,omitempty"`
	// Rate bounds how many of the tool's calls start in any window of PerMS milliseconds.
	Rate *RateLimit `json:"rate,omitempty"`
	// MaxWaitMS is how long a call over a limit may wait for its turn before it fails rate_limited (zero:
	// LimitWaitDefault).
	MaxWaitMS int64 `json:"max_wait_ms,omitempty"`
}

// ConcurrencyLimit: at most Max calls running at once, per value of Key.
type ConcurrencyLimit struct {
	Max int `json:"max"`
	// Key splits the limit: "" (one limit for the tool), "caller", "agent", or "input.<property>".
	Key string `json:"key,omitempty"`
}

// RateLimit: at most Max calls started in any window of PerMS milliseconds, per value of Key.
type RateLimit struct {
	Max   int    `json:"max"`
	PerMS int64  `json:"per_ms"`
	Key   string `json:"key,omitempty"`
}

// The ranges of concurrency and rate limits, and how long a call waits for its turn by default.
const (
	ConcurrencyMax   = 10_000
	RateMax          = 100_000
	RatePerMin       = 10 * time.Millisecond
	RatePerMax       = 24 * time.Hour
	LimitWaitDefault = time.Minute
	LimitWaitMax     = 24 * time.Hour
)

// LimitKey is the value a call's limit is counted by: "" when the limit is the tool's, else the call's
// caller, agent or input property (its JSON text; "" when the input lacks it).
func LimitKey(key, caller, agent string, input map[string]any) string {
	switch {
	case key == "":
		return ""
	case key == "caller":
		return caller
	case key == "agent":
		return agent
	}
	v, ok := input[strings.TrimPrefix(key, "input.")]
	if !ok {
		return ""
	}
	if s, isString := v.(string); isString {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// HasCallLimits reports whether the tool's calls are bounded in number (concurrency or rate).
func (t *Tool) HasCallLimits() bool {
	return t.Limits != nil && (t.Limits.Concurrency != nil || t.Limits.Rate != nil)
}

// LimitWait is how long a call of the tool may wait for its turn.
func (t *Tool) LimitWait() time.Duration {
	if t.Limits == nil || t.Limits.MaxWaitMS == 0 {
		return LimitWaitDefault
	}
	return time.Duration(t.Limits.MaxWaitMS) * time.Millisecond
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
		c.add(label, "limits", `must be an object like {"max_input_bytes": 1048576, "concurrency": {"max": 2}, "rate": {"max": 50, "per_ms": 1000}, "max_wait_ms": 60000}: `+err.Error())
		return
	}
	for name, v := range map[string]int64{"max_input_bytes": l.MaxInputBytes, "max_result_bytes": l.MaxResultBytes} {
		if v != 0 && (v < SizeLimitMin || v > SizeLimitMax) {
			c.add(label, "limits."+name, fmt.Sprintf("is %d, outside the allowed %d..%d", v, SizeLimitMin, SizeLimitMax))
		}
	}
	if cl := l.Concurrency; cl != nil {
		if cl.Max < 1 || cl.Max > ConcurrencyMax {
			c.add(label, "limits.concurrency.max", fmt.Sprintf("is %d, outside the allowed 1..%d", cl.Max, ConcurrencyMax))
		}
		c.checkLimitKey(label, "limits.concurrency.key", cl.Key)
	}
	if rl := l.Rate; rl != nil {
		if rl.Max < 1 || rl.Max > RateMax {
			c.add(label, "limits.rate.max", fmt.Sprintf("is %d, outside the allowed 1..%d", rl.Max, RateMax))
		}
		if d := time.Duration(rl.PerMS) * time.Millisecond; d < RatePerMin || d > RatePerMax {
			c.add(label, "limits.rate.per_ms", fmt.Sprintf("is %d, outside the allowed %d..%d", rl.PerMS, RatePerMin.Milliseconds(), RatePerMax.Milliseconds()))
		}
		c.checkLimitKey(label, "limits.rate.key", rl.Key)
	}
	if d := time.Duration(l.MaxWaitMS) * time.Millisecond; l.MaxWaitMS < 0 || d > LimitWaitMax {
		c.add(label, "limits.max_wait_ms", fmt.Sprintf("is %d, outside the allowed 0..%d", l.MaxWaitMS, LimitWaitMax.Milliseconds()))
	}
	t.Limits = &l
}

func (c *checker) checkLimitKey(label, field, key string) {
	switch {
	case key == "", key == "caller", key == "agent":
	case strings.HasPrefix(key, "input.") && len(key) > len("input."):
		// The property is checked against the input schema once it is compiled (checkLimitKeyProperty).
	default:
		c.add(label, field, fmt.Sprintf(`is %q; it must be "caller", "agent" or "input.<property>" (or left out: one limit for the tool)`, key))
	}
}

// checkLimitKeyProperty checks that an input.<property> limit key names a top-level input property.
func (c *checker) checkLimitKeyProperty(label string, t *Tool) {
	for field, p := range t.limitKeyProperties() {
		if !t.HasInputProperty(p) {
			c.add(label, field, fmt.Sprintf("names input property %q, which the input schema does not declare", p))
		}
	}
}

// limitKeyProperties are the input properties the tool's limits are counted by, by registry field.
func (t *Tool) limitKeyProperties() map[string]string {
	out := map[string]string{}
	if t.Limits == nil {
		return out
	}
	add := func(field, key string) {
		if p, ok := strings.CutPrefix(key, "input."); ok && p != "" {
			out[field] = p
		}
	}
	if cl := t.Limits.Concurrency; cl != nil {
		add("limits.concurrency.key", cl.Key)
	}
	if rl := t.Limits.Rate; rl != nil {
		add("limits.rate.key", rl.Key)
	}
	return out
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
