package chat

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
)

// The text an LLM writes becomes its run's text events as the provider streams it
// (docs/durable-runs.md#text-as-it-is-written). They are a view, never the journal: the answer is journaled
// whole once it is complete, and a client resets the text it shows at each llm_started (a new attempt, a new
// step, or a step asked again by the brain that took the turn over).

const (
	// TextIntervalDefault is how often, at most, an LLM attempt's streamed text is written as a text event
	// (GEM_BRAIN_CHAT_TEXT_INTERVAL): text waits at most this long, and a fast stream is one event per interval,
	// not one per token.
	TextIntervalDefault = 100 * time.Millisecond
	// textEventMax is how much text makes a text event be written at once, before its interval ends.
	textEventMax = 4 << 10
)

// textStream writes the text of one LLM attempt as the run's text events: coalesced (one write per interval
// at most; the text still waiting when the attempt ends goes with its llm_ended, in the journal), fenced by
// the run's claim, scrubbed of the run's secret values — text that could be the start of one is held back
// until the text after it shows it is not — and bounded as the reply is (answerTextMax).
type textStream struct {
	c        *Chat
	ctx      context.Context
	r        *chatRun
	values   []string // the secret values it is scrubbed of (the run's, as the attempt began)
	patterns []string // those values as they may appear in text: as they are and as JSON quotes them

	write sync.Mutex // one write at a time, in order: held by a write, and by end
	mu    sync.Mutex
	raw   strings.Builder // the attempt's text as the provider streamed it
	sent  int             // bytes of raw already written, or given to end's caller
	timer *time.Timer
	wrote bool // a text event was written
	done  bool // ended: nothing more is written
}

// newTextStream is the text stream of one attempt of an LLM step of r.
func (c *Chat) newTextStream(ctx context.Context, r *chatRun) *textStream {
	t := &textStream{c: c, ctx: ctx, r: r, values: append([]string(nil), r.secretValues...)}
	for _, v := range t.values {
		t.patterns = append(t.patterns, v)
		if q := jsonQuoted(v); q != v {
			t.patterns = append(t.patterns, q)
		}
	}
	return t
}

// add takes a piece of the text as the provider streamed it; it is written when the interval started by the
// first piece not yet written ends (at once when textEventMax bytes wait).
func (t *textStream) add(piece string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done || t.raw.Len() >= answerTextMax {
		return
	}
	t.raw.WriteString(piece)
	switch {
	case t.timer == nil:
		t.timer = time.AfterFunc(t.c.textInterval, t.flush)
	case t.raw.Len()-t.sent >= textEventMax && t.timer.Stop():
		t.timer = time.AfterFunc(0, t.flush)
	}
}

// flush writes the text waiting as a text event (the timer's).
func (t *textStream) flush() {
	t.write.Lock()
	defer t.write.Unlock()
	t.mu.Lock()
	t.timer = nil
	if t.done {
		t.mu.Unlock()
		return
	}
	piece := t.take(false)
	t.mu.Unlock()
	if piece == "" {
		return
	}
	// Fenced: a brain that lost the run writes nothing beside the brain that took it over.
	err := postgres.RunEventAddFenced(t.ctx, t.c.pool, t.r.runID, t.r.claim, postgres.EventText, map[string]string{"text": piece})
	if err != nil {
		// Events are a view: the answer is journaled whole whatever becomes of them.
		t.r.log.Warn().Err(err).Msg("error recording a text event")
		return
	}
	t.mu.Lock()
	t.wrote = true
	t.mu.Unlock()
}

// end stops the stream once its attempt has ended and returns the text not yet written (scrubbed), which
// goes with the attempt's llm_ended; wrote says whether text events were written before it.
func (t *textStream) end() (rest string, wrote bool) {
	if t == nil {
		return "", false
	}
	t.write.Lock() // a write under way ends first
	defer t.write.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.done {
		return "", t.wrote
	}
	t.done = true
	return t.take(true), t.wrote
}

// take returns the text waiting that may be written now, scrubbed, and marks it sent. Unless final, text
// that could be the start of a secret value is held back; so is text at answerTextMax, which never goes on.
func (t *textStream) take(final bool) string {
	raw := t.raw.String()
	end := len(raw)
	capped := end > answerTextMax
	if capped {
		end = answerTextMax
		for end > t.sent && !utf8.RuneStart(raw[end]) {
			end--
		}
	}
	if !final || capped {
		end -= heldBack(raw[t.sent:end], t.patterns)
	}
	if end <= t.sent {
		return ""
	}
	piece := raw[t.sent:end]
	t.sent = end
	return scrubValues(piece, t.values)
}

// heldBack is how many bytes at the end of s could be the start of one of patterns (and so must wait for
// the text after them): the longest end of s that is a proper prefix of a pattern.
func heldBack(s string, patterns []string) int {
	held := 0
	for _, p := range patterns {
		for k := min(len(p)-1, len(s)); k > held; k-- {
			if strings.HasSuffix(s, p[:k]) {
				held = k
				break
			}
		}
	}
	return held
}

// jsonQuoted is s as a JSON string quotes it, without the quotes.
func jsonQuoted(s string) string {
	q, _ := json.Marshal(s)
	if len(q) < 2 {
		return s
	}
	return string(q[1 : len(q)-1])
}

// scrubValues replaces secret values (longest first) in a text, as they are and as JSON quotes them.
func scrubValues(s string, values []string) string {
	for _, v := range values {
		s = strings.ReplaceAll(s, v, registry.SecretRedacted)
		if q := jsonQuoted(v); q != v {
			s = strings.ReplaceAll(s, q, registry.SecretRedacted)
		}
	}
	return s
}
