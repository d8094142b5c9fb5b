package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// The providers' streams, as their APIs send them and their SDKs read them: OpenAI's chat completion chunks
// (data: {chunk} lines, the last one data: [DONE]; the usage in a last chunk without choices when
// stream_options.include_usage asks), Anthropic's named events (message_start, content_block_start,
// content_block_delta with text_delta or input_json_delta, content_block_stop, message_delta with the
// stop reason and output tokens, message_stop). Each event is flushed as it is written, and a turn's Gap
// spaces its pieces in time.

// argumentPieces is how many pieces a tool call's arguments are streamed in.
const argumentPieces = 3

// sse writes events to a streamed answer, flushing each.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

// event writes one event: its name ("" for none, as OpenAI's) and its data (JSON, or a string as it is).
func (s *sse) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	b, ok := data.(string)
	if !ok {
		j, _ := json.Marshal(data)
		b = string(j)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.w.(http.Flusher).Flush()
}

// cut drops the connection mid-answer, as a network or a provider failing does.
func (s *sse) cut() { panic(http.ErrAbortHandler) }

// pause waits the turn's gap before a piece after the first.
func pause(t Turn, first bool) {
	if !first && t.Gap > 0 {
		time.Sleep(t.Gap)
	}
}

// streamText sends the turn's text pieces with send, cutting the stream after CutAfter of them.
func streamText(s *sse, t Turn, send func(piece string)) {
	for i, p := range t.pieces() {
		pause(t, i == 0)
		send(p)
		if t.CutAfter > 0 && i+1 == t.CutAfter {
			s.cut()
		}
	}
}

// splitText cuts s into at most n pieces of about the same size, each whole characters.
func splitText(s string, n int) []string {
	var out []string
	size := max(1, len(s)/n)
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		if len(out) == n-1 {
			cut = len(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// streamOpenAI answers a turn as OpenAI streams a chat completion; usage nil sends no usage chunk.
func streamOpenAI(w http.ResponseWriter, id, model string, t Turn, usage map[string]any) {
	s := startSSE(w)
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1763800000, "model": model, "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = nil
		}
		s.event("", c)
	}
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	streamText(s, t, func(p string) { chunk(map[string]any{"content": p}, nil) })
	finish := "stop"
	for k, c := range t.Calls {
		finish = "tool_calls"
		pause(t, false)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": k, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, p := range splitText(c.Arguments, argumentPieces) {
			pause(t, false)
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": k, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	if t.CutAfter > 0 && t.CutAfter > len(t.pieces()) {
		s.cut()
	}
	chunk(map[string]any{}, finish)
	if usage != nil {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1763800000, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{}, "usage": usage})
	}
	s.event("", "[DONE]")
}

// streamAnthropic answers a turn as Anthropic streams a message.
func (srv *Server) streamAnthropic(w http.ResponseWriter, id, model string, t Turn) {
	s := startSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	s.event("ping", map[string]any{"type": "ping"})
	index := 0
	block := func(start map[string]any, deltas func()) {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		deltas()
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if t.text() != "" || len(t.Calls) == 0 {
		block(map[string]any{"type": "text", "text": ""}, func() {
			streamText(s, t, func(p string) {
				s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
					"delta": map[string]any{"type": "text_delta", "text": p}})
			})
		})
	}
	stop := "end_turn"
	for _, c := range t.Calls {
		stop = "tool_use"
		var input map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &input); err != nil {
			srv.problem("fake Anthropic: scripted arguments must be a JSON object: %v", err)
		}
		pause(t, false)
		block(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}, func() {
			for _, p := range append([]string{""}, splitText(c.Arguments, argumentPieces)...) {
				pause(t, p == "")
				s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		})
	}
	if t.CutAfter > 0 && t.CutAfter > len(t.pieces()) {
		s.cut()
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 12}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
