package chat

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gemhq/gem/registry"
	"github.com/prometheus/client_golang/prometheus"
)

// The reasons an agent stumbles over a tool (docs/evals.md#where-agents-stumble-from-production), as the
// metric's reason label and brain_tool_attempts' reason column name them.
const (
	StumbleValidation   = string(registry.CodeValidation)
	StumbleUnknownTool  = string(registry.CodeUnknownTool)
	StumbleNotEnabled   = string(registry.CodeToolNotEnabled)
	StumbleSearchNoCall = "search_no_call"
)

// Tool labels that are not a registry tool's name: the label stays bounded whatever a model invents.
const (
	// StumbleToolUnknown labels a call of a tool the registry does not have.
	StumbleToolUnknown = "(unknown)"
	// StumbleToolNone labels a search that ended the run with no tool described.
	StumbleToolNone = "(none)"
)

// MetricToolStumbles counts the calls agents stumbled over, by tool, agent and reason.
const MetricToolStumbles = "gem_brain_tool_stumbles_total"

// CountStumbles counts, from now on, the calls this chat's agents stumble over in reg
// (gem_brain_tool_stumbles_total{tool, agent, reason}): as a call is refused before it exists, as a receipt
// that failed validation_error, unknown_tool or tool_not_enabled is read, and as a turn that searched for
// tools ends with no call. A second chat on one registry shares the first's counter.
func (c *Chat) CountStumbles(reg prometheus.Registerer) error {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricToolStumbles,
		Help: "Calls agents stumbled over, by tool (a registry name, (unknown) or (none)), agent and reason (validation_error, unknown_tool, tool_not_enabled, search_no_call)."},
		[]string{"tool", "agent", "reason"})
	if err := reg.Register(counter); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return fmt.Errorf("error registering the tool stumbles metric: %w", err)
		}
		existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
		if !ok {
			return fmt.Errorf("error registering the tool stumbles metric: %w", err)
		}
		counter = existing
	}
	c.stumbles = counter
	return nil
}

// stumbled counts one stumble; tool is the name the agent gave (portable or dotted), or "" for none.
func (c *Chat) stumbled(agent, tool string, reason string) {
	if c.stumbles == nil {
		return
	}
	c.stumbles.WithLabelValues(c.stumbleTool(tool), agent, reason).Inc()
}

// stumbleTool is a tool's label: its registry name, or one label for every name the registry lacks.
func (c *Chat) stumbleTool(name string) string {
	if name == "" {
		return StumbleToolNone
	}
	if t, ok := c.reg.Tool(registry.DottedName(name)); ok {
		return t.Name
	}
	return StumbleToolUnknown
}

// refused counts a call the turn refused before it existed as brain_tool_attempts reads it: a call of the
// search's own tools is the turn's search, which told nothing; one of the brain's other tools is no attempt at
// a tool of the registry; any other, a stumble over its name for code.
func (c *Chat) refused(r *chatRun, name string, code registry.ErrorCode) {
	switch {
	case name == metaSearchTools || name == metaDescribeTool:
		r.noteSearch()
	case slices.Contains(metaToolNames, name):
	default:
		c.stumbled(r.agent.Slug, name, string(code))
	}
}

// receiptStumbled counts a receipt read back whose error is a stumble.
func (c *Chat) receiptStumbled(agent string, rec *registry.Receipt) {
	if rec == nil || rec.Error == nil {
		return
	}
	switch code := string(rec.Error.Code); code {
	case StumbleValidation, StumbleUnknownTool, StumbleNotEnabled:
		c.stumbled(agent, rec.ToolName, code)
	}
}

// noteSearch notes a search_tools or describe_tool call of the turn. The turn's last one decides whether it
// was told no tool fits, as brain_tool_attempts reads it: a search that failed told nothing. (answerMeta
// notes the tool a describe_tool described: one that exists, never a name made up.)
func (r *chatRun) noteSearch() {
	r.searched = true
	r.noToolFits = false
}
