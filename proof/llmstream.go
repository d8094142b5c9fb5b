package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The local fake LLMs (fakellm.go for make bench, chaosllm.go for make chaos) answer a request that asks to
// stream ("stream": true, as the brain's do) as the providers stream: OpenAI's chat completion chunks (data:
// lines, the usage in a last chunk when stream_options.include_usage asks, then data: [DONE]) and Anthropic's
// named events (message_start … message_stop), the text in pieces spaced by gap, each tool call's arguments
// in two pieces. Without a gap the events are written at once, as an instant model's arrive.

// streamedCall is a tool call as a fake streams it.
type streamedCall struct {
	ID, Name, Arguments string
}

// streamWish is what a request's body says of streaming.
type streamWish struct {
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// sseWriter writes server-sent events: flushing each when the answer is spread in time (a gap between its
// pieces), else all at once at the end, as a model that answers at once is read.
type sseWriter struct {
	w     http.ResponseWriter
	flush bool
}

func newSSE(w http.ResponseWriter, gap time.Duration) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, flush: gap > 0}
}

func (s *sseWriter) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	b, ok := data.(string)
	if !ok {
		j, _ := json.Marshal(data)
		b = string(j)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok && s.flush {
		f.Flush()
	}
}

// textPieces cuts text into about n pieces at spaces (whole words).
func textPieces(text string, n int) []string {
	if text == "" {
		return nil
	}
	words := strings.SplitAfter(text, " ")
	per := max(1, (len(words)+n-1)/n)
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

// halves cuts s in two (whole bytes of ASCII JSON; a multi-byte character is left whole).
func halves(s string) []string {
	cut := len(s) / 2
	for cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut++
	}
	return []string{s[:cut], s[cut:]}
}

// streamOpenAIAnswer streams an answer as OpenAI does; usage nil sends no usage chunk.
func streamOpenAIAnswer(w http.ResponseWriter, id, model string, pieces []string, gap time.Duration, calls []streamedCall, usage map[string]any) {
	s := newSSE(w, gap)
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(gap)
		}
		chunk(map[string]any{"content": p}, nil)
	}
	finish := "stop"
	for k, c := range calls {
		finish = "tool_calls"
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": k, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, p := range halves(c.Arguments) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": k, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if usage != nil {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{}, "usage": usage})
	}
	s.event("", "[DONE]")
}

// streamAnthropicAnswer streams an answer as Anthropic does.
func streamAnthropicAnswer(w http.ResponseWriter, id, model string, pieces []string, gap time.Duration, calls []streamedCall, inputTokens, outputTokens int) {
	s := newSSE(w, gap)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": inputTokens, "output_tokens": 1}}})
	index := 0
	block := func(start map[string]any, deltas []map[string]any, gap time.Duration) {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		for i, d := range deltas {
			if i > 0 {
				time.Sleep(gap)
			}
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if len(pieces) > 0 {
		var deltas []map[string]any
		for _, p := range pieces {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas, gap)
	}
	stop := "end_turn"
	for _, c := range calls {
		stop = "tool_use"
		var deltas []map[string]any
		for _, p := range halves(c.Arguments) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
		}
		block(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}, deltas, 0)
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
