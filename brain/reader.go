package brain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gemhq/gem/registry"
)

// Reader is who reads calls, receipts and runs, and the one rule of what it may read
// (docs/governance.md#who-reads-what): a caller reads what it made (requested_by) or approved
// (approved_by); a caller holding audit reads everyone's; a caller holding approve also reads what it
// decides — calls held for approval and stored plans.
type Reader struct {
	// Name is the caller reading.
	Name string
	// All says it holds audit (admins hold it through "*").
	All bool
	// Approver says it holds approve.
	Approver bool
}

// ReaderOf is the reader a caller with these grants is.
func ReaderOf(name string, grants registry.Grants) Reader {
	return Reader{Name: name, All: grants.Allows(registry.PermissionAudit), Approver: grants.Allows(registry.PermissionApprove)}
}

// Owns says whether the reader made or approved what requestedBy and approvedBy name.
func (r Reader) Owns(requestedBy, approvedBy string) bool {
	return r.Name != "" && (requestedBy == r.Name || approvedBy == r.Name)
}

// MayReadCall says whether the reader may read a call (its input, receipt and approval); held says the call
// needed approval (it has a row in core_approvals).
func (r Reader) MayReadCall(requestedBy, approvedBy string, held bool) bool {
	return r.All || r.Owns(requestedBy, approvedBy) || r.Approver && held
}

// MayReadRun says whether the reader may read a run; a stored plan (status planned) is read by those who
// may approve it.
func (r Reader) MayReadRun(requestedBy, approvedBy, status string) bool {
	return r.All || r.Owns(requestedBy, approvedBy) || r.Approver && status == RunPlanned
}

// Viewer is the name a listing keeps to (the calls it made or approved), or "" when the reader reads all.
func (r Reader) Viewer() string {
	switch {
	case r.All:
		return ""
	case r.Name == "":
		return "-" // no caller's name starts with "-": a reader without a name reads nothing
	}
	return r.Name
}

// AgentHeader names the agent a request to the API or to /mcp is made for.
const AgentHeader = "X-GEM-Agent"

// CallAgent is the agent a caller's call, run or MCP session is made for: the one it names, which it must be
// allowed to act as (agents nil: any), else — for a caller limited to some agents, every call of which is
// made for one of them — its only agent; with several and none named, the request must say which (400).
func CallAgent(caller string, agents []string, named string) (string, error) {
	switch {
	case named != "" && agents != nil && !slices.Contains(agents, named):
		return "", &Error{Code: EFORBIDDEN, Message: fmt.Sprintf("caller %q may not act as agent %q", caller, named),
			Details: map[string]any{"caller": caller, "agent": named, "agents": agents}}
	case named != "" || agents == nil:
		return named, nil
	case len(agents) == 1:
		return agents[0], nil
	case len(agents) == 0:
		return "", &Error{Code: EFORBIDDEN, Message: fmt.Sprintf("caller %q may act as no agent, and every call of it is made for one", caller),
			Details: map[string]any{"caller": caller, "agents": agents}}
	}
	return "", &Error{Code: EINVALID, Message: fmt.Sprintf("caller %q acts only as agents %s: name the one this is for (the %s header, or the agent field of POST /calls)",
		caller, strings.Join(agents, ", "), AgentHeader), Details: map[string]any{"caller": caller, "agents": agents, "field": "agent"}}
}
