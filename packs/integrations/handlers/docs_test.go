package integrationshandlers_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

const docPath = "../../../docs/integrations.md"

// TestDocsListEveryVariable keeps docs/integrations.md's table of variables true to the code's defaults.
func TestDocsListEveryVariable(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	for _, v := range integrationspack.Variables() {
		def := "`" + v.Default + "`"
		if v.Default == "unset" {
			def = "unset"
		}
		require.Contains(t, doc, "| `"+v.Name+"` | "+def+" |", "docs/integrations.md lists %s with its default", v.Name)
	}
}

// TestDocsListEveryTool: the page's table of tools has a row for each integrations tool of the registry, with
// its idempotency mode, and no row for a tool the registry does not have.
func TestDocsListEveryTool(t *testing.T) {
	t.Parallel()
	reg, err := ourRegistry()
	require.NoError(t, err)
	want := map[string]string{}
	for _, tool := range reg.Tools() {
		if strings.HasPrefix(tool.Name, "integrations.") {
			want[tool.Name] = string(tool.Idempotency.Mode)
		}
	}
	require.NotEmpty(t, want)
	got := map[string]string{}
	for _, row := range tableRows(section(readDoc(t), "## Tools")) {
		got[strings.Trim(row[0], "`")] = row[1]
	}
	require.Equal(t, want, got, "docs/integrations.md, ## Tools: each tool and its mode")
}

// TestDocsNameWhatExists: every tool, table and column the page names exists: a `domain.name` is a tool of the
// registry or a table's column, the table of tables lists every integration_ table of the database, and the
// Mermaid diagrams hold together (each edge joins nodes the diagram declares, each message participants it
// declares), name the tables they draw and the tools they start from as they are. The sync queue's diagram
// starts from every tool that writes to HighLevel (permission write:integrations).
func TestDocsNameWhatExists(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	reg, err := ourRegistry()
	require.NoError(t, err)
	pool, _ := sqltest.NewDB(t)
	ctx := context.Background()
	tables := columnsByTable(t, ctx, pool)

	diagrams := mermaidBlocks(doc)
	require.Len(t, diagrams, 2, "docs/integrations.md draws the sync queue and the webhook")
	var names []string
	for _, m := range regexp.MustCompile("`("+dottedName.String()+")`").FindAllStringSubmatch(doc, -1) {
		names = append(names, m[1])
	}
	for _, text := range diagrams {
		names = append(names, dottedName.FindAllString(text, -1)...)
	}
	for _, name := range names {
		if _, ok := reg.Tool(name); ok || !isDomain(reg, name) {
			continue
		}
		table, column, _ := strings.Cut(name, ".")
		require.Truef(t, slices.Contains(tables[table], column), "docs/integrations.md names %s: no tool, nor a table's column", name)
	}

	var listed []string
	for _, row := range tableRows(section(doc, "## Tables")) {
		if name := strings.Trim(row[0], "`"); !strings.Contains(name, ".") {
			listed = append(listed, name)
		}
	}
	var integrationTables []string
	for name := range tables {
		if strings.HasPrefix(name, "integration_") {
			integrationTables = append(integrationTables, name)
		}
	}
	require.ElementsMatch(t, integrationTables, listed, "docs/integrations.md, ## Tables")

	queue, err := parseMermaid(diagrams[0])
	require.NoError(t, err)
	require.Equal(t, "flowchart", queue.kind)
	var writers, drawn []string
	for _, tool := range reg.Tools() {
		if strings.HasPrefix(tool.Name, "integrations.") && slices.Contains(tool.Permissions, "write:integrations") {
			writers = append(writers, tool.Name)
		}
		for _, label := range queue.nodes {
			if strings.HasPrefix(tool.Name, "integrations.") && regexp.MustCompile(`\b`+tool.Method()+`\b`).MatchString(label) {
				drawn = append(drawn, tool.Name)
				break
			}
		}
	}
	require.NotEmpty(t, writers)
	require.Subset(t, drawn, writers, "the sync queue's diagram draws every tool that writes to HighLevel")

	webhook, err := parseMermaid(diagrams[1])
	require.NoError(t, err)
	require.Equal(t, "sequenceDiagram", webhook.kind)
	for _, d := range []*diagram{queue, webhook} {
		for _, table := range d.tables {
			_, ok := tables[table]
			require.Truef(t, ok, "a %s of docs/integrations.md draws the table %s, which the database does not have", d.kind, table)
		}
	}
}

func readDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(docPath)
	require.NoError(t, err)
	return string(doc)
}

// dottedName is a name like a tool's (leads.create) or a table's column (leads.highlevel_contact_id).
var dottedName = regexp.MustCompile(`\b[a-z][a-z_]*(?:\.[a-z][a-z_]*)+\b`)

// isDomain says whether name starts with a domain of the registry's tools (leads. for leads.create).
func isDomain(reg *registry.Registry, name string) bool {
	domains, _ := reg.Domains()
	return slices.ContainsFunc(domains, func(d string) bool { return strings.HasPrefix(name, strings.SplitN(d, ".", 2)[0]+".") })
}

// columnsByTable is the database's tables with their columns.
func columnsByTable(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'`)
	require.NoError(t, err)
	defer rows.Close()
	tables := map[string][]string{}
	for rows.Next() {
		var table, column string
		require.NoError(t, rows.Scan(&table, &column))
		tables[table] = append(tables[table], column)
	}
	require.NoError(t, rows.Err())
	return tables
}

// section is the part of a Markdown page under heading, up to the next heading of its level or higher.
func section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	level := strings.IndexByte(heading, ' ')
	var b strings.Builder
	for line := range strings.Lines(rest) {
		if n := len(line) - len(strings.TrimLeft(line, "#")); n > 0 && n <= level && strings.HasPrefix(line[n:], " ") {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// tableRows are the cells of a section's table rows (not the header, nor its rule), trimmed.
func tableRows(s string) [][]string {
	var rows [][]string
	header := true
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			header = true
			continue
		}
		if strings.HasPrefix(line, "| ---") {
			header = false
			continue
		}
		if header {
			continue
		}
		var cells []string
		for c := range strings.SplitSeq(strings.Trim(line, "|"), " | ") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	return rows
}

// mermaidBlocks are the page's ```mermaid blocks.
func mermaidBlocks(doc string) []string {
	var blocks []string
	for _, part := range strings.Split(doc, "```mermaid\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		blocks = append(blocks, block)
	}
	return blocks
}

// diagram is what the page's Mermaid diagrams say: flowchart nodes or sequence participants with their labels,
// and the tables they draw (a flowchart's database nodes, a sequence's INSERT INTO or UPDATE).
type diagram struct {
	kind   string
	nodes  map[string]string
	tables []string
}

var (
	flowArrow    = regexp.MustCompile(`^(-->|-\.->)(\|"[^"]*"\|)?\s*`)
	participant  = regexp.MustCompile(`^participant (\w+) as (.+)$`)
	message      = regexp.MustCompile(`^(\w+)\s*(->>|-->>)\s*(\w+): (.+)$`)
	sqlTable     = regexp.MustCompile(`\b(?:INSERT(?: INTO)?|UPDATE|FROM)\s+([a-z_]+)`)
	flowNode     = regexp.MustCompile(`^(\w+)`)
	tableName    = regexp.MustCompile(`^[a-z_]+`)
	flowNodeEnds = [][2]string{{`[("`, `")]`}, {`["`, `"]`}, {`{"`, `"}`}, {`("`, `")`}}
)

// parseMermaid reads the two kinds of Mermaid diagram the page draws, in the forms it uses: a flowchart of
// labelled nodes joined by arrows (-->, -.->, with |"labels"|), and a sequence diagram of declared participants,
// messages (->>, -->>) and alt/else/end. Anything else is an error, as is an arrow to a node, or a message
// from a participant, the diagram does not declare.
func parseMermaid(text string) (*diagram, error) {
	lines := slices.Collect(strings.Lines(strings.TrimSpace(text)))
	d := &diagram{kind: strings.Fields(lines[0])[0], nodes: map[string]string{}}
	var used []string
	switch d.kind {
	case "flowchart":
		for _, line := range lines[1:] {
			rest := strings.TrimSpace(line)
			for rest != "" {
				id := flowNode.FindString(rest)
				if id == "" {
					return nil, fmt.Errorf("flowchart: no node at %q", rest)
				}
				rest = rest[len(id):]
				used = append(used, id)
				for _, ends := range flowNodeEnds {
					if after, ok := strings.CutPrefix(rest, ends[0]); ok {
						label, tail, ok := strings.Cut(after, ends[1])
						if !ok {
							return nil, fmt.Errorf("flowchart: node %s's label is not closed: %q", id, line)
						}
						if ends[0] == `[("` { // a database: the table is the label's first word
							d.tables = append(d.tables, tableName.FindString(label))
						}
						d.nodes[id], rest = label, tail
						break
					}
				}
				if rest = strings.TrimSpace(rest); rest == "" {
					break
				}
				arrow := flowArrow.FindString(rest)
				if arrow == "" {
					return nil, fmt.Errorf("flowchart: no arrow at %q", rest)
				}
				if rest = rest[len(arrow):]; rest == "" {
					return nil, fmt.Errorf("flowchart: an arrow to nothing: %q", line)
				}
			}
		}
	case "sequenceDiagram":
		depth := 0
		for _, line := range lines[1:] {
			line = strings.TrimSpace(line)
			switch word := strings.Fields(line)[0]; {
			case participant.MatchString(line):
				m := participant.FindStringSubmatch(line)
				d.nodes[m[1]] = m[2]
			case message.MatchString(line):
				m := message.FindStringSubmatch(line)
				used = append(used, m[1], m[3])
				for _, t := range sqlTable.FindAllStringSubmatch(m[4], -1) {
					d.tables = append(d.tables, t[1])
				}
			case word == "alt":
				depth++
			case word == "else" && depth > 0:
			case word == "end" && depth > 0:
				depth--
			default:
				return nil, fmt.Errorf("sequenceDiagram: cannot read %q", line)
			}
		}
		if depth != 0 {
			return nil, fmt.Errorf("sequenceDiagram: %d alt blocks are not ended", depth)
		}
	default:
		return nil, fmt.Errorf("a %s diagram: this test reads flowcharts and sequence diagrams", d.kind)
	}
	for _, id := range used {
		if _, ok := d.nodes[id]; !ok {
			return nil, fmt.Errorf("%s: %s is drawn but never declared with a label (declared: %v)", d.kind, id, slices.Sorted(maps.Keys(d.nodes)))
		}
	}
	return d, nil
}
