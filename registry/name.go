package registry

import (
	"fmt"
	"regexp"
	"strings"
)

// Tool names leave GEM in two forms. GEM's own name is dotted ("os.create_note"): receipts, GET /calls, the
// studio, skills and docs use it. Model APIs accept only PortableNameRe in function names (OpenAI and
// Anthropic both refuse a dot), and MCP clients hand tool names to them as they are, so every place that
// exports tools — the LLM loop and MCP's tools/list — offers the portable name, each dot written as "__"
// ("os__create_note"). The registry refuses a name whose portable form is too long or does not read back as
// itself: so no two tools are exported under one name (each reads back as itself alone), and the mapping is
// reversed by rule (DottedName), without a lookup table.

// PortableNameRe is what OpenAI's and Anthropic's function names, and so every portable tool name, match.
var PortableNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// PortableNameMaxLen is the longest portable name model APIs accept.
const PortableNameMaxLen = 64

// portableDot is what a dot of a GEM name becomes in its portable name.
const portableDot = "__"

// PortableName is a tool's name as model APIs and MCP clients take it: "os.create_note" becomes
// "os__create_note". For a name the registry accepts, DottedName reverses it.
func PortableName(name string) string { return strings.ReplaceAll(name, ".", portableDot) }

// DottedName is GEM's name of a tool named portably (PortableName's inverse); a GEM name is returned as it is
// (it holds no "__"), so a caller may hand either form.
func DottedName(portable string) string { return strings.ReplaceAll(portable, portableDot, ".") }

// ReservedDomain is GEM's own: its MCP server's tools (gem.get_receipt, gem.approve) are named in it, so no
// registry tool may be.
const ReservedDomain = "gem"

// CheckToolName says what is wrong with a tool name, as the registry check says it, or returns nil: it must be
// of the form domain.method and be exported one to one.
func CheckToolName(name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("%q %s", name, nameFormProblem)
	}
	if problem := checkPortableName(name); problem != "" {
		return fmt.Errorf("%q %s", name, problem)
	}
	return nil
}

// checkPortableName says what keeps a name (of the tool-name form) from being exported one to one, or "".
func checkPortableName(name string) string {
	portable := PortableName(name)
	switch {
	case len(portable) > PortableNameMaxLen:
		return fmt.Sprintf("is longer than model APIs accept: exported as %q, %d characters (at most %d, each dot counting as two)",
			portable, len(portable), PortableNameMaxLen)
	case !PortableNameRe.MatchString(portable):
		return fmt.Sprintf("is exported as %q, which model APIs refuse (%s)", portable, PortableNameRe)
	case DottedName(portable) != name:
		return fmt.Sprintf(`is exported as %q, which reads back as %q: a segment may not hold "__", nor end with "_" before a dot`,
			portable, DottedName(portable))
	case strings.HasPrefix(name, ReservedDomain+"."):
		return fmt.Sprintf("is in domain %q, which is GEM's own (its MCP tools gem.get_receipt and gem.approve)", ReservedDomain)
	}
	return ""
}
