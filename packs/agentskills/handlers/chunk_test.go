package agentskillshandlers_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	agentskillshandlers "github.com/gemhq/gem/packs/agentskills/handlers"
	"github.com/stretchr/testify/require"
)

func TestSplitTextSections(t *testing.T) {
	t.Parallel()

	text := "---\ntitle: Dragons\ntags: [lore]\n---\n" +
		"# Dragons\n\nDragons are old.\n\n" +
		"## Habitat\n\nThey sleep under mountains.\r\nSome sleep in the sea.\n\n" +
		"### Northern dragons\n\nCold ones.\n\n" +
		"## Diet\n\nGoats.\n\n" +
		"Trade\n-----\n\nDragons do not trade.\n\n" +
		"```\n# not a heading\n\ncode stays whole\n```\n"
	chunks := agentskillshandlers.SplitText(text, agentskillshandlers.ChunkOptions{})

	type got struct {
		headings string
		text     string
	}
	var all []got
	for _, c := range chunks {
		all = append(all, got{strings.Join(c.Headings, " > "), c.Text})
	}
	require.Equal(t, []got{
		{"Dragons", "# Dragons\n\nDragons are old."},
		{"Dragons > Habitat", "## Habitat\n\nThey sleep under mountains.\nSome sleep in the sea."},
		{"Dragons > Habitat > Northern dragons", "### Northern dragons\n\nCold ones."},
		{"Dragons > Diet", "## Diet\n\nGoats."},
		{"Dragons > Trade", "Trade\n\nDragons do not trade.\n\n```\n# not a heading\n\ncode stays whole\n```"},
	}, all, "front matter dropped, one chunk per section, setext headings and fenced code understood")

	require.Empty(t, agentskillshandlers.SplitText("", agentskillshandlers.ChunkOptions{}))
	require.Empty(t, agentskillshandlers.SplitText(" \n\n\t\n", agentskillshandlers.ChunkOptions{}))

	// Headings without text still make a chunk, so their words can be found.
	only := agentskillshandlers.SplitText("# A\n\n## B", agentskillshandlers.ChunkOptions{})
	require.Len(t, only, 1)
	require.Equal(t, "# A\n\n## B", only[0].Text)
	require.Equal(t, []string{"A", "B"}, only[0].Headings)
}

func TestSplitTextSizeAndOverlap(t *testing.T) {
	t.Parallel()

	// Forty numbered sentences in paragraphs of four, about 1,600 characters under one heading.
	var b strings.Builder
	b.WriteString("# Chronicle\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "Year %d brought a long winter to the valley. ", i)
		if i%4 == 3 {
			b.WriteString("\n\n")
		}
	}
	opts := agentskillshandlers.ChunkOptions{TargetChars: 400, OverlapChars: 80}
	chunks := agentskillshandlers.SplitText(b.String(), opts)
	require.Greater(t, len(chunks), 3)
	for i, c := range chunks {
		require.LessOrEqual(t, utf8.RuneCountInString(c.Text), opts.TargetChars, "chunk %d", i)
		require.Equal(t, []string{"Chronicle"}, c.Headings)
		if i == 0 {
			continue
		}
		// Each chunk starts with whole sentences from the end of the one before.
		first := c.Text[:strings.Index(c.Text, ".")+1]
		require.True(t, strings.HasPrefix(first, "Year "), "chunk %d starts at a sentence: %q", i, c.Text)
		require.Contains(t, chunks[i-1].Text, first, "chunk %d repeats the end of chunk %d", i, i-1)
		require.GreaterOrEqual(t, strings.LastIndex(chunks[i-1].Text, first), len(chunks[i-1].Text)-opts.OverlapChars,
			"the overlap comes from the last %d characters", opts.OverlapChars)
	}

	// No overlap: the chunks hold the text exactly once.
	plain := agentskillshandlers.SplitText(b.String(), agentskillshandlers.ChunkOptions{TargetChars: 400, OverlapChars: 0})
	var total int
	for _, c := range plain {
		total += strings.Count(c.Text, "Year ")
	}
	require.Equal(t, 40, total)
}

func TestSplitTextLongPieces(t *testing.T) {
	t.Parallel()

	// A paragraph with no sentence end, and a word longer than a chunk, are still cut to size.
	words := strings.Repeat("lorem ipsum dolor ", 100)
	long := strings.Repeat("x", 650)
	chunks := agentskillshandlers.SplitText(words+"\n\n"+long+"\n\nÅngström ünïcode end.", agentskillshandlers.ChunkOptions{TargetChars: 300, OverlapChars: 0})
	var joined strings.Builder
	for _, c := range chunks {
		require.LessOrEqual(t, utf8.RuneCountInString(c.Text), 300)
		require.True(t, utf8.ValidString(c.Text), "never cuts inside a character")
		joined.WriteString(c.Text)
	}
	require.Equal(t, 650, strings.Count(joined.String(), "x"), "every character is kept")
	require.Equal(t, 100, strings.Count(joined.String(), "lorem"))
	require.Contains(t, joined.String(), "Ångström ünïcode end.")

	// Overlap is capped at half a chunk.
	capped := agentskillshandlers.SplitText(words, agentskillshandlers.ChunkOptions{TargetChars: 200, OverlapChars: 5000})
	for _, c := range capped {
		require.LessOrEqual(t, utf8.RuneCountInString(c.Text), 200)
	}
}
