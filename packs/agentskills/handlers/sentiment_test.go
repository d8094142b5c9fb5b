package agentskillshandlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gemhq/gem/llmconfig"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

const sentimentText = "The roof repair was quick and the crew were lovely. Thank you!"

type sentimentResult struct {
	Label     string   `json:"label"`
	Score     float64  `json:"score"`
	Emotions  []string `json:"emotions"`
	Rationale string   `json:"rationale"`
	Provider  string   `json:"provider"`
	Model     string   `json:"model"`
}

// fakeOpenAI speaks the OpenAI chat completions API at /v1/chat/completions and answers every request
// with the given assistant message content.
func fakeOpenAI(t *testing.T, content func() string) *fakeProvider {
	return newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		f.expect(r.Method == http.MethodPost, "method %s, want POST", r.Method)
		f.expect(r.URL.Path == "/v1/chat/completions", "path %s, want /v1/chat/completions", r.URL.Path)
		f.expect(r.Header.Get("Authorization") == "Bearer sk-test", "Authorization %q", r.Header.Get("Authorization"))
		f.expect(strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"), "Content-Type %q", r.Header.Get("Content-Type"))
		body := f.decodeBody(r)
		f.expect(body["model"] == "gpt-test", "model %v", body["model"])
		messages, _ := body["messages"].([]any)
		f.expect(len(messages) == 2, "want a system and a user message, got %v", body["messages"])
		if len(messages) == 2 {
			system, _ := messages[0].(map[string]any)
			user, _ := messages[1].(map[string]any)
			f.expect(system["role"] == "system", "first message %v", system)
			f.expect(strings.Contains(system["content"].(string), "JSON"), "JSON mode needs the word JSON in the messages")
			f.expect(user["role"] == "user", "second message %v", user)
			text, _ := user["content"].(string)
			f.expect(strings.Contains(text, "<text>\n"+sentimentText+"\n</text>"), "the user message carries the text: %q", text)
		}
		format, _ := body["response_format"].(map[string]any)
		f.expect(format["type"] == "json_object", "response_format %v", body["response_format"])

		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-123", "object": "chat.completion", "created": 1735689600, "model": "gpt-test-2025-01-01",
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": content(), "refusal": nil},
				"logprobs":      nil,
				"finish_reason": "stop",
			}},
			"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
		})
	})
}

// fakeAnthropic speaks the Anthropic Messages API at /v1/messages and answers with one text block.
func fakeAnthropic(t *testing.T, text func() string) *fakeProvider {
	return newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		f.expect(r.Method == http.MethodPost, "method %s, want POST", r.Method)
		f.expect(r.URL.Path == "/v1/messages", "path %s, want /v1/messages", r.URL.Path)
		f.expect(r.Header.Get("X-Api-Key") == "sk-ant-test", "X-Api-Key %q", r.Header.Get("X-Api-Key"))
		f.expect(r.Header.Get("Anthropic-Version") != "", "the Anthropic-Version header is required")
		f.expect(r.Header.Get("Authorization") == "", "Authorization %q: the key goes in X-Api-Key", r.Header.Get("Authorization"))
		body := f.decodeBody(r)
		f.expect(body["model"] == "claude-test", "model %v", body["model"])
		maxTokens, _ := body["max_tokens"].(float64)
		f.expect(maxTokens > 0, "max_tokens is required, got %v", body["max_tokens"])
		system, _ := body["system"].([]any)
		f.expect(len(system) == 1, "system %v", body["system"])
		if len(system) == 1 {
			block, _ := system[0].(map[string]any)
			f.expect(block["type"] == "text" && strings.Contains(block["text"].(string), "JSON"), "system block %v", block)
		}
		messages, _ := body["messages"].([]any)
		f.expect(len(messages) == 1, "want one user message, got %v", body["messages"])
		if len(messages) == 1 {
			m, _ := messages[0].(map[string]any)
			f.expect(m["role"] == "user", "message role %v", m["role"])
			content, _ := m["content"].([]any)
			f.expect(len(content) == 1, "content %v", m["content"])
			if len(content) == 1 {
				block, _ := content[0].(map[string]any)
				f.expect(block["type"] == "text", "content block type %v", block["type"])
				f.expect(strings.Contains(block["text"].(string), sentimentText), "the user message carries the text")
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
			"content":     []any{map[string]any{"type": "text", "text": text()}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 110, "output_tokens": 35},
		})
	})
}

func openAIConfig(url string) agentskillspack.Config {
	return agentskillspack.Config{LLM: llmconfig.Config{BaseURL: url + "/v1", APIKey: "sk-test", Model: "gpt-test"}}
}

func TestSentimentOpenAI(t *testing.T) {
	t.Parallel()
	fake := fakeOpenAI(t, func() string {
		return `{"label": "positive", "score": 0.85, "emotions": ["Gratitude", "joy", "joy"], "rationale": "The customer thanks the crew."}`
	})
	ctx, b := setup(t, openAIConfig(fake.URL))

	var s sentimentResult
	r := b.succeed(t, ctx, "sentiment.analyze", jsonString(t, map[string]any{"text": sentimentText, "context": "a customer's review"}), &s)
	require.Equal(t, sentimentResult{
		Label: "positive", Score: 0.85, Emotions: []string{"gratitude", "joy"}, Rationale: "The customer thanks the crew.",
		Provider: "openai", Model: "gpt-test",
	}, s)
	require.Equal(t, "positive", r.Summary["result.label"])
	require.Empty(t, r.Effects.DBWrites)
	require.Equal(t, 1, fake.checked(t))
}

func TestSentimentAnthropic(t *testing.T) {
	t.Parallel()
	fake := fakeAnthropic(t, func() string {
		// Claude has no JSON mode and sometimes fences its answer; a complete object inside is accepted.
		return "```json\n{\"label\": \"Negative\", \"score\": -0.6, \"rationale\": \"The customer is upset.\"}\n```"
	})
	ctx, b := setup(t, agentskillspack.Config{LLM: llmconfig.Config{
		Provider: "anthropic", BaseURL: fake.URL, APIKey: "sk-ant-test", Model: "claude-test",
	}})

	var s sentimentResult
	b.succeed(t, ctx, "sentiment.analyze", jsonString(t, map[string]any{"text": sentimentText}), &s)
	require.Equal(t, sentimentResult{
		Label: "negative", Score: -0.6, Emotions: []string{}, Rationale: "The customer is upset.", Provider: "anthropic", Model: "claude-test",
	}, s)
	require.Equal(t, 1, fake.checked(t))
}

func TestSentimentMalformedAnswer(t *testing.T) {
	t.Parallel()
	answer := make(chan string, 1)
	fake := fakeOpenAI(t, func() string { return <-answer })
	ctx, b := setup(t, openAIConfig(fake.URL))

	for _, tt := range []struct {
		name, answer string
		problems     []string
	}{
		{"prose", "I think it is quite positive!", []string{"the answer holds no JSON object"}},
		{"empty", "", []string{"the answer is empty"}},
		{"broken json", `{"label": "positive", "score": 0.5,`, []string{"the answer holds no JSON object"}},
		{"two objects", `{"label": "positive"} {"score": 1}`, []string{"the answer holds more than one JSON value"}},
		{"wrong fields", `{"label": "happy", "score": "high", "emotions": "joy"}`, []string{
			`label "happy" is not positive, neutral or negative`, `score is "high", not a number`,
			`emotions is "joy", not an array of strings`, "rationale is missing",
		}},
		{"out of range", `{"label": "positive", "score": 3, "rationale": "very"}`, []string{"score 3 is outside -1..1"}},
		{"contradiction", `{"label": "negative", "score": 0.9, "rationale": "x"}`, []string{"label negative contradicts score 0.9"}},
		{"missing", `{}`, []string{"label is missing", "score is missing", "rationale is missing"}},
	} {
		answer <- tt.answer
		r := b.call(t, ctx, "sentiment.analyze", jsonString(t, map[string]any{"text": sentimentText}))
		d := requireFailed(t, r, registry.StatusFailed, registry.CodeHandlerError)
		require.Equal(t, "malformed_model_output", d["reason"], tt.name)
		require.Equal(t, "openai", d["provider"], tt.name)
		require.Equal(t, "gpt-test", d["model"], tt.name)
		require.Equal(t, tt.answer, d["answer"], tt.name)
		var problems []string
		for _, p := range d["problems"].([]any) {
			problems = append(problems, p.(string))
		}
		require.Equal(t, tt.problems, problems, tt.name)
		require.Contains(t, r.Error.Message, "the model's answer is not the sentiment JSON asked for", tt.name)
		require.Equal(t, 1, r.Attempt, "%s: a malformed answer is not retried", tt.name)
	}
	require.Equal(t, 8, fake.checked(t))
}

func TestSentimentProviderErrors(t *testing.T) {
	t.Parallel()
	fake := newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided: sk-test.", "type": "invalid_request_error", "param": nil, "code": "invalid_api_key",
		}})
	})
	ctx, b := setup(t, openAIConfig(fake.URL))

	r := b.call(t, ctx, "sentiment.analyze", `{"text": "fine"}`)
	d := requireFailed(t, r, registry.StatusFailed, registry.CodeHandlerError)
	require.Equal(t, "credentials_refused", d["reason"])
	require.EqualValues(t, 401, d["status"])
	require.Contains(t, d["body"], "invalid_api_key")
	require.Contains(t, r.Error.Message, "GEM_LLM_API_KEY")
	require.Equal(t, 1, fake.checked(t), "a refused key is not retried")
}

func TestSentimentNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{LLM: llmconfig.Config{Model: "gpt-test"}})
	r := b.call(t, ctx, "sentiment.analyze", `{"text": "fine"}`)
	d := requireNotConfigured(t, r, "GEM_LLM_API_KEY", "GEM_LLM_MODEL")
	require.Contains(t, d.Reason, "GEM_LLM_API_KEY not set")
	require.NotContains(t, d.Reason, "GEM_LLM_MODEL not set")

	ctx, b = setup(t, agentskillspack.Config{})
	d = requireNotConfigured(t, b.call(t, ctx, "sentiment.analyze", `{"text": "fine"}`), "GEM_LLM_API_KEY", "GEM_LLM_MODEL")
	require.Contains(t, d.Reason, "GEM_LLM_API_KEY and GEM_LLM_MODEL not set")

	ctx, b = setup(t, agentskillspack.Config{LLM: llmconfig.Config{Provider: "gemini", APIKey: "k", Model: "m"}})
	d = requireNotConfigured(t, b.call(t, ctx, "sentiment.analyze", `{"text": "fine"}`), "GEM_LLM_PROVIDER", "GEM_LLM_API_KEY", "GEM_LLM_MODEL")
	require.Contains(t, d.Reason, `GEM_LLM_PROVIDER is "gemini"`)

	// A malformed variable read from the environment is the tool's not_configured, not a failed start.
	env := map[string]string{"GEM_LLM_API_KEY": "k", "GEM_LLM_MODEL": "m", "GEM_LLM_TIMEOUT": "soon"}
	ctx, b = setup(t, agentskillspack.ConfigFromEnv(func(k string) string { return env[k] }))
	d = requireNotConfigured(t, b.call(t, ctx, "sentiment.analyze", `{"text": "fine"}`), "GEM_LLM_PROVIDER", "GEM_LLM_MAX_TOKENS", "GEM_LLM_TIMEOUT", "GEM_LLM_API_KEY", "GEM_LLM_MODEL")
	require.Contains(t, d.Reason, `GEM_LLM_TIMEOUT: "soon" is not a duration`)

	// So is a base URL no request can reach: it is not tried.
	env = map[string]string{"GEM_LLM_API_KEY": "k", "GEM_LLM_MODEL": "m", "GEM_LLM_BASE_URL": "localhost:11434/v1"}
	ctx, b = setup(t, agentskillspack.ConfigFromEnv(func(k string) string { return env[k] }))
	d = requireNotConfigured(t, b.call(t, ctx, "sentiment.analyze", `{"text": "fine"}`), "GEM_LLM_PROVIDER", "GEM_LLM_MAX_TOKENS", "GEM_LLM_TIMEOUT", "GEM_LLM_API_KEY", "GEM_LLM_MODEL")
	require.Contains(t, d.Reason, `GEM_LLM_BASE_URL="localhost:11434/v1" is not an http(s) URL`)
}
