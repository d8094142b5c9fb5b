package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// NewOpenAI starts a fake OpenAI chat-completions API; its base URL is URL + "/v1" and it wants key.
func NewOpenAI(t testing.TB, key string, turns ...Turn) *Server {
	s := &Server{t: t, key: key, script: turns}
	s.start(t, s.serveOpenAI)
	return s
}

func openAIError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}

func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		openAIError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.key {
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
		return
	}
	var body struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  map[string]any `json:"parameters"`
				Strict      bool           `json:"strict"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := readJSON(r, &body); err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if body.Model == "" || len(body.Messages) == 0 {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "you must provide a model and messages")
		return
	}
	req := &Request{Model: body.Model, Stream: body.Stream, IncludeUsage: body.StreamOptions.IncludeUsage}
	for i, m := range body.Messages {
		msg := Message{Role: m.Role, Content: textOf(m.Content), ToolCallID: m.ToolCallID}
		switch m.Role {
		case "system", "developer":
			if i != 0 {
				openAIError(w, http.StatusBadRequest, "invalid_request_error", "the fake expects the system message first")
				return
			}
			req.System = msg.Content
			continue
		case "user", "assistant", "tool":
		default:
			openAIError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.role: %q is not a role", i, m.Role))
			return
		}
		for _, tc := range m.ToolCalls {
			if tc.Type != "function" || tc.ID == "" {
				openAIError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.tool_calls: each needs an id and type function", i))
				return
			}
			msg.ToolCalls = append(msg.ToolCalls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			openAIError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: a tool message needs tool_call_id", i))
			return
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range body.Tools {
		if t.Type != "function" {
			openAIError(w, http.StatusBadRequest, "invalid_request_error", "tools: only function tools are expected")
			return
		}
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters, Strict: t.Function.Strict})
	}
	if err := checkTools(req.Tools); err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if err := checkToolResults(req.Messages); err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id': "+err.Error())
		return
	}

	turn, ok := s.next(req)
	if !ok {
		s.problem("fake OpenAI: no scripted turn left for request %d", len(s.Requests()))
		openAIError(w, http.StatusInternalServerError, "server_error", "the fake's script is exhausted")
		return
	}
	if f := turn.Fail; f != nil {
		f.writeHeader(w)
		openAIError(w, f.Status, f.errorType(false), f.Message)
		return
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content)) + 3
	}
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12}
	id := fmt.Sprintf("chatcmpl-fake%d", len(s.Requests()))
	if req.Stream && !s.whole.Load() {
		if !req.IncludeUsage {
			usage = nil
		}
		streamOpenAI(w, id, req.Model, turn, usage)
		return
	}
	message := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	if turn.text() != "" || len(turn.Calls) == 0 {
		message["content"] = turn.text()
	}
	if len(turn.Calls) > 0 {
		var calls []any
		for _, c := range turn.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		message["tool_calls"] = calls
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": 1763800000,
		"model": req.Model, "system_fingerprint": "fp_fake",
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish, "logprobs": nil}},
		"usage":   usage,
	})
}
