package llmtext_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/llmtext"
	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

var captionSchema = &llmtext.Schema{Name: "caption_test", Doc: map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"caption": map[string]any{"type": "string"}, "hashtags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
	"required":             []string{"caption", "hashtags"},
	"additionalProperties": false,
}}

type caption struct {
	Caption  string   `json:"caption"`
	Hashtags []string `json:"hashtags"`
}

// fake serves one answer per request and hands the decoded request body to the test.
func fake(t *testing.T, status int, answer any) (*httptest.Server, chan map[string]any) {
	t.Helper()
	bodies := make(chan map[string]any, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		body["_path"], body["_auth"], body["_key"] = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")
		bodies <- body
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		require.NoError(t, json.NewEncoder(w).Encode(answer))
	}))
	t.Cleanup(srv.Close)
	return srv, bodies
}

func openAIAnswer(content string) map[string]any {
	return map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1735689600, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	}
}

func TestOpenAIStructuredOutput(t *testing.T) {
	t.Parallel()
	srv, bodies := fake(t, http.StatusOK, openAIAnswer(`{"caption": "Ridge rebedded in Newtown.", "hashtags": ["roofing"]}`))
	m := llmtext.New(llmconfig.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-test"}, nil)
	require.Equal(t, "openai", m.Provider())

	req := llmtext.Request{System: "Write a caption as JSON.", User: "<facts>\n- suburb: Newtown\n</facts>", Schema: captionSchema}
	a, err := m.Complete(context.Background(), req)
	require.NoError(t, err)
	var c caption
	problems, err := captionSchema.Decode(a, &c)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, caption{"Ridge rebedded in Newtown.", []string{"roofing"}}, c)

	body := <-bodies
	require.Equal(t, "/v1/chat/completions", body["_path"])
	require.Equal(t, "Bearer sk-test", body["_auth"])
	require.Equal(t, "gpt-test", body["model"])
	format := body["response_format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"])
	js := format["json_schema"].(map[string]any)
	require.Equal(t, "caption_test", js["name"])
	require.Equal(t, true, js["strict"])
	require.Equal(t, []any{"caption", "hashtags"}, js["schema"].(map[string]any)["required"])
	messages := body["messages"].([]any)
	require.Equal(t, map[string]any{"role": "system", "content": "Write a caption as JSON."}, messages[0])
	require.Equal(t, "user", messages[1].(map[string]any)["role"])
}

func TestAnthropicStructuredOutput(t *testing.T) {
	t.Parallel()
	srv, bodies := fake(t, http.StatusOK, map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
		"content":     []any{map[string]any{"type": "text", "text": "```json\n{\"caption\": \"Gutters cleared.\", \"hashtags\": []}\n```"}},
		"stop_reason": "end_turn", "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})
	m := llmtext.New(llmconfig.Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-test"}, nil)
	a, err := m.Complete(context.Background(), llmtext.Request{System: "Caption it.", User: "facts", Schema: captionSchema, MaxTokens: 700})
	require.NoError(t, err)
	var c caption
	problems, err := captionSchema.Decode(a, &c)
	require.NoError(t, err)
	require.Empty(t, problems, "a fenced object is accepted")
	require.Equal(t, "Gutters cleared.", c.Caption)

	body := <-bodies
	require.Equal(t, "/v1/messages", body["_path"])
	require.Equal(t, "sk-ant-test", body["_key"])
	require.EqualValues(t, 700, body["max_tokens"], "the request's bound when GEM_LLM_MAX_TOKENS is unset")
	format := body["output_config"].(map[string]any)["format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"])
	require.Equal(t, []any{"caption", "hashtags"}, format["schema"].(map[string]any)["required"])
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		answer   llmtext.Answer
		problems []string
	}{
		{"prose", llmtext.Answer{Text: "Sure! Here is a caption."}, []string{"the answer holds no JSON object"}},
		{"empty and cut", llmtext.Answer{Truncated: true}, []string{"the answer is empty (the model stopped at its token limit)"}},
		{"refusal", llmtext.Answer{Refusal: "I can't help with that."}, []string{"the model refused: I can't help with that."}},
		{"two objects", llmtext.Answer{Text: `{"caption": "a", "hashtags": []} {"x": 1}`}, []string{"the answer holds more than one JSON value"}},
		{"wrong shape", llmtext.Answer{Text: `{"caption": 5, "extra": true}`}, []string{
			"at /: additionalProperties 'extra' not allowed", "at /: missing properties: 'hashtags'", "at /caption: expected string, but got number",
		}},
	} {
		var c caption
		problems, err := captionSchema.Decode(tt.answer, &c)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.problems, problems, tt.name)
	}
}

func TestFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		status int
		code   registry.ErrorCode
		reason string
	}{
		{http.StatusUnauthorized, registry.CodeHandlerError, "credentials_refused"},
		{http.StatusBadRequest, registry.CodeHandlerError, "provider_error"},
		{http.StatusTooManyRequests, registry.CodeRetriesExhausted, ""},
		{http.StatusInternalServerError, registry.CodeRetriesExhausted, ""},
	} {
		srv, _ := fake(t, tt.status, map[string]any{"error": map[string]any{"message": "nope", "type": "x", "param": nil, "code": nil}})
		m := llmtext.New(llmconfig.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-test"}, &http.Client{})
		_, err := m.Complete(ctx, llmtext.Request{System: "s", User: "u", JSON: true})
		var he *llmtext.HTTPError
		require.ErrorAs(t, err, &he)
		require.Equal(t, tt.status, he.Status)
		var e *executor.Error
		require.True(t, errors.As(llmtext.Failure(ctx, m, err), &e), "status %d", tt.status)
		require.Equal(t, tt.code, e.Code, "status %d", tt.status)
		if tt.reason != "" {
			require.Equal(t, tt.reason, e.Details.(map[string]any)["reason"])
		}
	}
}

func TestNotConfigured(t *testing.T) {
	t.Parallel()
	require.NoError(t, llmtext.NotConfigured(llmconfig.Config{APIKey: "k", Model: "m"}, nil, "x.tool"))
	var e *executor.Error
	require.ErrorAs(t, llmtext.NotConfigured(llmconfig.Config{}, nil, "media.generate_caption"), &e)
	require.Equal(t, registry.CodeNotConfigured, e.Code)
	require.Contains(t, e.Message, "media.generate_caption needs an LLM")
	d := e.Details.(registry.NotConfiguredDetails)
	require.Equal(t, []string{"GEM_LLM_API_KEY", "GEM_LLM_MODEL"}, d.RequiredEnv)
	require.ErrorAs(t, llmtext.NotConfigured(llmconfig.Config{}, errors.New("GEM_LLM_TIMEOUT: bad"), "t"), &e)
	require.Contains(t, e.Message, "GEM_LLM_TIMEOUT: bad")
}

func TestExtractJSONObject(t *testing.T) {
	t.Parallel()
	require.Equal(t, `{"a": 1}`, llmtext.ExtractJSONObject("Here you go: {\"a\": 1} Thanks"))
	require.Equal(t, `{"a": 1}`, llmtext.ExtractJSONObject("```json\n{\"a\": 1}\n```"))
	require.Equal(t, "", llmtext.ExtractJSONObject("no object"))
}
