package agentskillshandlers

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunking defaults, in characters (Unicode code points).
const (
	// DefaultChunkChars is the size a chunk grows to before the next one starts.
	DefaultChunkChars = 1000
	// DefaultOverlapChars is how much of a chunk's end the next chunk of the same section repeats.
	DefaultOverlapChars = 150
	// ChunkerVersion changes whenever SplitText cuts the same text differently; lore.ingest hashes it with
	// the text, so documents ingested again after a change are chunked again.
	ChunkerVersion = "1"
)

// ChunkOptions says how SplitText cuts a text.
type ChunkOptions struct {
	// TargetChars is the size (in characters) a chunk grows to before the next one starts. A chunk is at most
	// TargetChars plus its overlap. Defaults to DefaultChunkChars when zero or negative.
	TargetChars int
	// OverlapChars is how much of the end of a chunk the next chunk of the same section starts with, cut at a
	// sentence or word boundary; 0 means none. It is capped at half of TargetChars. Negative means 0.
	OverlapChars int
}

// TextChunk is one piece of a text.
type TextChunk struct {
	// Headings are the headings above the chunk, outermost first.
	Headings []string
	// Text is the chunk's text. The first chunk of a section starts with the section's heading line.
	Text string
}

// SplitText cuts a Markdown or plain text into chunks for search:
//
//  1. A YAML front matter block (between "---" lines at the very start) is dropped.
//  2. The text is read as blocks: ATX ("## Title") and setext (a line underlined with === or ---) headings,
//     fenced code blocks (``` or ~~~, kept whole), and paragraphs (separated by blank lines).
//  3. Every heading starts a new chunk, so a chunk never spans two sections; the heading path is kept in
//     Headings.
//  4. Blocks are packed into the current chunk until the next would take it past TargetChars; then the
//     chunk is closed and the next starts with the last OverlapChars of it (from a sentence start when
//     there is one, else a word start).
//  5. A block longer than TargetChars is cut at sentence ends (and line ends), then at spaces, and only a
//     single longer word is cut anywhere.
//
// Empty (or blank) text gives no chunks.
func SplitText(text string, opts ChunkOptions) []TextChunk {
	target := opts.TargetChars
	if target <= 0 {
		target = DefaultChunkChars
	}
	overlap := min(max(opts.OverlapChars, 0), target/2)
	// Pieces of a long block leave room for the overlap the chunk may start with.
	pieceMax := max(target-overlap, 1)

	c := chunker{target: target, overlap: overlap}
	for _, b := range parseBlocks(text) {
		if b.level > 0 {
			c.heading(b)
			continue
		}
		for _, piece := range splitBlock(b, pieceMax) {
			c.add(piece)
		}
	}
	if c.fresh {
		c.flush(false)
	}
	return c.out
}

// chunker packs blocks into chunks.
type chunker struct {
	target, overlap int
	out             []TextChunk

	stack []block // the headings above the current position
	parts []string
	size  int
	// body: the chunk has text other than heading lines and overlap; fresh: it has anything new since the
	// last flush (the overlap it starts with is not new).
	body, fresh bool
}

func (c *chunker) path() []string {
	p := make([]string, len(c.stack))
	for i, h := range c.stack {
		p[i] = h.title
	}
	return p
}

func (c *chunker) heading(b block) {
	if c.body {
		c.flush(false)
	} else if !c.fresh {
		// Only overlap from the previous section: it does not belong to this one.
		c.parts, c.size = nil, 0
	}
	for len(c.stack) > 0 && c.stack[len(c.stack)-1].level >= b.level {
		c.stack = c.stack[:len(c.stack)-1]
	}
	c.stack = append(c.stack, b)
	c.append(b.text)
	c.fresh = true
}

func (c *chunker) add(piece string) {
	n := runeLen(piece)
	if c.body && c.size+2+n > c.target {
		c.flush(true)
	}
	c.append(piece)
	c.body, c.fresh = true, true
}

func (c *chunker) append(s string) {
	if len(c.parts) > 0 {
		c.size += 2
	}
	c.parts = append(c.parts, s)
	c.size += runeLen(s)
}

// flush closes the current chunk; withOverlap starts the next with the end of this one.
func (c *chunker) flush(withOverlap bool) {
	if len(c.parts) == 0 {
		return
	}
	text := strings.Join(c.parts, "\n\n")
	c.out = append(c.out, TextChunk{Headings: c.path(), Text: text})
	c.parts, c.size, c.body, c.fresh = nil, 0, false, false
	if withOverlap && c.overlap > 0 {
		if tail := overlapTail(text, c.overlap); tail != "" {
			c.append(tail)
		}
	}
}

// block is a heading (level > 0), a fenced code block or a paragraph.
type block struct {
	level int    // 1..6 for a heading
	title string // a heading's text without its markers
	text  string // the block as it appears in a chunk
	code  bool
}

var (
	atxHeading  = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	fenceOpen   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	setextLine1 = regexp.MustCompile(`^ {0,3}=+[ \t]*$`)
	setextLine2 = regexp.MustCompile(`^ {0,3}-+[ \t]*$`)
	listItem    = regexp.MustCompile(`^\s*([-*+]|\d+[.)])\s`)
)

// parseBlocks reads a text as headings, fenced code blocks and paragraphs.
func parseBlocks(text string) []block {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := stripFrontMatter(strings.Split(text, "\n"))

	var blocks []block
	var para []string
	flushPara := func() {
		if t := strings.TrimSpace(strings.Join(para, "\n")); t != "" {
			blocks = append(blocks, block{text: t})
		}
		para = nil
	}
	var fence string // the open fence's marker, or ""
	for _, line := range lines {
		if fence != "" {
			para = append(para, line)
			if strings.HasPrefix(strings.TrimSpace(line), fence) && strings.Trim(strings.TrimSpace(line), fence[:1]) == "" {
				blocks = append(blocks, block{text: strings.Join(para, "\n"), code: true})
				para, fence = nil, ""
			}
			continue
		}
		if m := fenceOpen.FindStringSubmatch(line); m != nil {
			flushPara()
			fence = m[1]
			para = []string{line}
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			flushPara()
			title := strings.TrimSpace(m[2])
			if title == "" {
				continue // a bare "#" line is no heading worth keeping
			}
			blocks = append(blocks, block{level: len(m[1]), title: title, text: strings.TrimSpace(line)})
			continue
		}
		if len(para) == 1 && !listItem.MatchString(para[0]) && strings.TrimSpace(para[0]) != "" {
			level := 0
			if setextLine1.MatchString(line) {
				level = 1
			} else if setextLine2.MatchString(line) {
				level = 2
			}
			if level > 0 {
				title := strings.TrimSpace(para[0])
				blocks = append(blocks, block{level: level, title: title, text: title})
				para = nil
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			flushPara()
			continue
		}
		para = append(para, line)
	}
	if fence != "" {
		// An unclosed fence runs to the end of the text.
		if t := strings.Join(para, "\n"); strings.TrimSpace(t) != "" {
			blocks = append(blocks, block{text: t, code: true})
		}
		para = nil
	}
	flushPara()
	return blocks
}

// stripFrontMatter drops a YAML front matter block: "---" on the first line, up to the next "---" or "..."
// line within the first 200 lines.
func stripFrontMatter(lines []string) []string {
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t") != "---" {
		return lines
	}
	for i := 1; i < len(lines) && i < 200; i++ {
		if l := strings.TrimRight(lines[i], " \t"); l == "---" || l == "..." {
			return lines[i+1:]
		}
	}
	return lines
}

// splitBlock cuts a block into pieces of at most limit characters.
func splitBlock(b block, limit int) []string {
	if runeLen(b.text) <= limit {
		return []string{b.text}
	}
	var segments []string
	if b.code {
		segments = splitKeep(b.text, func(r rune, _ string) bool { return r == '\n' })
	} else {
		segments = sentences(b.text)
	}
	return packSegments(segments, limit)
}

// packSegments joins consecutive segments into pieces of at most limit characters, cutting segments that are
// longer at spaces (and words that are longer anywhere).
func packSegments(segments []string, limit int) []string {
	var pieces []string
	var cur strings.Builder
	curLen := 0
	emit := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			pieces = append(pieces, t)
		}
		cur.Reset()
		curLen = 0
	}
	for _, seg := range segments {
		n := runeLen(seg)
		if n > limit {
			emit()
			words := splitKeep(seg, func(r rune, _ string) bool { return unicode.IsSpace(r) })
			for _, w := range words {
				for runeLen(w) > limit {
					head, rest := cutRunes(w, limit)
					if curLen > 0 {
						emit()
					}
					pieces = append(pieces, head)
					w = rest
				}
				if curLen+runeLen(w) > limit {
					emit()
				}
				cur.WriteString(w)
				curLen += runeLen(w)
			}
			continue
		}
		if curLen+n > limit {
			emit()
		}
		cur.WriteString(seg)
		curLen += n
	}
	emit()
	return pieces
}

// sentences cuts a paragraph after each sentence end (., ! or ? with any closing quotes or brackets,
// followed by white space) and each line end; the pieces keep their white space, so they join back to the
// paragraph.
func sentences(text string) []string {
	return splitKeep(text, func(r rune, before string) bool {
		if r == '\n' {
			return true
		}
		if !unicode.IsSpace(r) {
			return false
		}
		// White space after a sentence end (before is the piece so far).
		trimmed := strings.TrimRight(before, `"'”’)]`)
		return strings.HasSuffix(trimmed, ".") || strings.HasSuffix(trimmed, "!") || strings.HasSuffix(trimmed, "?")
	})
}

// splitKeep cuts s after every rune for which cut returns true (given the rune and the text before it);
// the pieces keep every character.
func splitKeep(s string, cut func(r rune, before string) bool) []string {
	var out []string
	start := 0
	for i, r := range s {
		if cut(r, s[start:i]) {
			end := i + utf8.RuneLen(r)
			out = append(out, s[start:end])
			start = end
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// overlapTail is the end of text, at most n characters, starting at a sentence start when the tail holds
// one, else at a word start.
func overlapTail(text string, n int) string {
	if runeLen(text) <= n {
		return ""
	}
	_, tail := cutRunes(text, runeLen(text)-n)
	if parts := sentences(tail); len(parts) > 1 {
		if s := strings.TrimSpace(strings.Join(parts[1:], "")); s != "" {
			return s
		}
	}
	if i := strings.IndexFunc(tail, unicode.IsSpace); i >= 0 {
		return strings.TrimSpace(tail[i:])
	}
	return strings.TrimSpace(tail)
}

// cutRunes splits s after its first n characters.
func cutRunes(s string, n int) (string, string) {
	i := 0
	for j := range s {
		if i == n {
			return s[:j], s[j:]
		}
		i++
	}
	return s, ""
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }
