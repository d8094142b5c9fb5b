package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// fakeLLM is a local LLM for make bench that answers at once in OpenAI's Chat Completions wire format (as a
// stream when asked, llmstream.go), so the agent loop's own cost shows apart from any model's latency. A
// conversation whose last message is the user's is answered with the tool calls calls picks for it; one that
// ends with tool results, with text.
type fakeLLM struct {
	srv   *http.Server
	url   string
	key   string
	calls func(fakeRequest) []fakeToolCall
	n     atomic.Int64
}

// fakeRequest is what the fake reads of a request to choose its tool calls: the user's last message and
// the functions offered.
type fakeRequest struct {
	User  string
	Tools []string
}

// offers reports whether the request offers a function.
func (r fakeRequest) offers(name string) bool { return slices.Contains(r.Tools, name) }

type fakeToolCall struct {
	Name      string
	Arguments string
}

func startFakeLLM(key string, calls func(fakeRequest) []fakeToolCall) (*fakeLLM, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeLLM{url: "http://" + ln.Addr().String() + "/v1", key: key, calls: calls}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.complete)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fakeLLM) close() { _ = f.srv.Close() }

func (f *fakeLLM) complete(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "Incorrect API key provided.", "type": "invalid_request_error"}})
		return
	}
	var body struct {
		streamWish
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "bad request", "type": "invalid_request_error"}})
		return
	}
	n := f.n.Add(1)
	text := "Done."
	var calls []streamedCall
	if last := body.Messages[len(body.Messages)-1]; last.Role == "user" {
		req := fakeRequest{}
		_ = json.Unmarshal(last.Content, &req.User) // a string; an array of parts leaves it empty
		for _, t := range body.Tools {
			req.Tools = append(req.Tools, t.Function.Name)
		}
		text = ""
		for i, c := range f.calls(req) {
			calls = append(calls, streamedCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: c.Name, Arguments: c.Arguments})
		}
	}
	id := fmt.Sprintf("chatcmpl-bench%d", n)
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	if body.Stream {
		if !body.StreamOptions.IncludeUsage {
			usage = nil
		}
		streamOpenAIAnswer(w, id, body.Model, textPieces(text, 1), 0, calls, usage)
		return
	}
	message := map[string]any{"role": "assistant", "content": text, "refusal": nil}
	finish := "stop"
	if text == "" {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		message = map[string]any{"role": "assistant", "content": nil, "refusal": nil, "tool_calls": tcs}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": body.Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish, "logprobs": nil}},
		"usage":   usage,
	})
}
