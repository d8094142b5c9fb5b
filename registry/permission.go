package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Grants are the permissions a caller holds, as patterns: "*" (every permission), "send:*" (every
// permission that starts with "send:"), or one permission ("read:db"). Tools declare permissions; a caller
// may call a tool when its grants cover every one of them (docs/governance.md).
type Grants []string

// Allows reports whether the grants cover permission p.
func (g Grants) Allows(p string) bool {
	for _, pattern := range g {
		if pattern == "*" || pattern == p {
			return true
		}
		if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// Missing returns the permissions of perms the grants do not cover, in perms' order (nil when none).
func (g Grants) Missing(perms []string) []string {
	var missing []string
	for _, p := range perms {
		if !g.Allows(p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// GEM's own permissions, beyond those tools declare.
const (
	// PermissionAdmin manages callers, devices, agents and skills.
	PermissionAdmin = "admin"
	// PermissionApprove decides calls that await approval, and approves other callers' stored plans.
	PermissionApprove = "approve"
	// PermissionAudit reads every caller's calls, receipts and runs (without it a caller reads its own).
	PermissionAudit = "audit"
)

var grantRe = regexp.MustCompile(`^(\*|[a-z][a-z0-9_-]*(:[a-z0-9_.-]+)*(:\*)?)$`)

// CheckGrant says what is wrong with a grant pattern, or returns nil: "*", a permission ("read:db"), or a
// prefix ending in "*" after a colon ("send:*").
func CheckGrant(p string) error {
	if len(p) > 100 || !grantRe.MatchString(p) {
		return fmt.Errorf("%q is not a permission or pattern (read:db, send:*, *)", p)
	}
	return nil
}

// CheckGrants checks every pattern and refuses repeats.
func CheckGrants(ps []string) error {
	for i, p := range ps {
		if err := CheckGrant(p); err != nil {
			return err
		}
		if slices.Contains(ps[:i], p) {
			return fmt.Errorf("%q is listed twice", p)
		}
	}
	return nil
}
