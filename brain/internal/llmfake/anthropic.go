package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// NewAnthropic starts a fake Anthropic Messages API (base URL is URL) that wants key.
func NewAnthropic(t testing.TB, key string, turns ...Turn) *Server {
	s := &Server{t: t, key: key, script: turns}
	s.start(t, s.serveAnthropic)
	return s
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		anthropicError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("Not found: %s %s", r.Method, r.URL.Path))
		return
	}
	if r.Header.Get("X-Api-Key") != s.key {
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var body struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := readJSON(r, &body); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	switch {
	case body.Model == "":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Field required")
		return
	case body.MaxTokens < 1:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	case len(body.Messages) == 0 || body.Messages[0].Role != "user":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: the first message must use the user role")
		return
	}
	req := &Request{Model: body.Model, System: textOf(body.System), Stream: body.Stream, IncludeUsage: body.Stream}
	for i, m := range body.Messages {
		if i > 0 && m.Role == body.Messages[i-1].Role {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: roles must alternate between user and assistant", i))
			return
		}
		var blocks []anthropicBlock
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			blocks = []anthropicBlock{{Type: "text", Text: text}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content: %v", i, err))
			return
		}
		switch m.Role {
		case "assistant":
			msg := Message{Role: "assistant"}
			for _, b := range blocks {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					var input map[string]any
					if json.Unmarshal(b.Input, &input) != nil || input == nil {
						anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: tool_use.input must be an object", i))
						return
					}
					msg.ToolCalls = append(msg.ToolCalls, Call{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				}
			}
			req.Messages = append(req.Messages, msg)
		case "user":
			var texts []string
			for _, b := range blocks {
				switch b.Type {
				case "text":
					texts = append(texts, b.Text)
				case "tool_result":
					// Results come first in the message that follows the tool_use.
					req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: b.ToolUseID, Content: textOf(b.Content), IsError: b.IsError})
				}
			}
			for _, t := range texts {
				req.Messages = append(req.Messages, Message{Role: "user", Content: t})
			}
		default:
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.role: %q", i, m.Role))
			return
		}
	}
	for _, t := range body.Tools {
		if t.InputSchema["type"] != "object" {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("tools: %s: input_schema.type must be object", t.Name))
			return
		}
		req.Tools = append(req.Tools, Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if err := checkTools(req.Tools); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if err := checkToolResults(req.Messages); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "tool_use ids were found without tool_result blocks immediately after: "+err.Error())
		return
	}

	turn, ok := s.next(req)
	if !ok {
		s.problem("fake Anthropic: no scripted turn left for request %d", len(s.Requests()))
		anthropicError(w, http.StatusInternalServerError, "api_error", "the fake's script is exhausted")
		return
	}
	if f := turn.Fail; f != nil {
		f.writeHeader(w)
		anthropicError(w, f.Status, f.errorType(true), f.Message)
		return
	}
	id := fmt.Sprintf("msg_fake%d", len(s.Requests()))
	if req.Stream && !s.whole.Load() {
		s.streamAnthropic(w, id, req.Model, turn)
		return
	}
	var content []any
	if turn.text() != "" {
		content = append(content, map[string]any{"type": "text", "text": turn.text()})
	}
	stop := "end_turn"
	for _, c := range turn.Calls {
		var input map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &input); err != nil {
			s.problem("fake Anthropic: scripted arguments must be a JSON object: %v", err)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		stop = "tool_use"
	}
	if content == nil {
		content = []any{map[string]any{"type": "text", "text": ""}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 12},
	})
}
