package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/llmconfig"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/gemhq/gem/registry"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// BenchmarkToolExport measures exporting the repository's whole registry to an LLM: building the ToolSet
// (function names and strict schemas, once per chat run or plan), and turning its definitions into each
// provider's request (every LLM turn). The provider requests go through the real SDK clients to an
// in-memory transport that answers at once, so they include the SDK's request encoding and the parsing of a
// minimal answer; the no_tools variants measure that fixed cost alone.
func BenchmarkToolExport(b *testing.B) {
	reg, err := registry.Load(testenv.RegistryPath())
	require.NoError(b, err)
	tools := reg.Tools()

	b.Run("tool_set", func(b *testing.B) {
		ts := NewToolSet(tools)
		require.Equal(b, reg.Len(), ts.Len())
		require.Len(b, ts.Defs(), reg.Len())
		strict := 0
		for _, d := range ts.Defs() {
			tl, ok := ts.Tool(d.Name)
			require.True(b, ok, "function %s maps back to its tool", d.Name)
			fn, _ := ts.Function(tl.Name)
			require.Equal(b, d.Name, fn)
			if d.Strict {
				require.Empty(b, StrictProblems(d.Parameters), "strict schema of %s", tl.Name)
				strict++
			}
		}
		require.Positive(b, strict, "some tools export strict schemas")

		b.ReportAllocs()
		for b.Loop() {
			if NewToolSet(tools).Len() != len(tools) {
				b.Fatal("tools are missing from the set")
			}
		}
	})

	defs := NewToolSet(tools).Defs()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		b.Run(provider+"_request", func(b *testing.B) {
			checkProviderAccepts(b, provider, defs)
			for _, variant := range []struct {
				name  string
				tools []ToolDef
			}{{"all_tools", defs}, {"no_tools", nil}} {
				b.Run(variant.name, func(b *testing.B) {
					client := &benchLLMClient{provider: provider}
					llm := benchLLM(b, provider, client)
					req := &Request{Model: "bench-model", System: "You are the office assistant.",
						Messages: []Message{{Role: "user", Content: "create a task to call John tomorrow, urgent"}}, Tools: variant.tools}

					resp, err := llm.Complete(b.Context(), req)
					require.NoError(b, err)
					require.Equal(b, "ok", resp.Content)
					require.Len(b, requestToolNames(b, provider, client.lastBody), len(variant.tools))

					b.ReportAllocs()
					b.SetBytes(int64(len(client.lastBody)))
					for b.Loop() {
						if _, err := llm.Complete(b.Context(), req); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// checkProviderAccepts offers defs once to the provider's fake, which refuses what the real service refuses
// (bad function names, strict schemas that are not strict), and checks every tool was offered.
func checkProviderAccepts(b *testing.B, provider string, defs []ToolDef) {
	b.Helper()
	const key = "bench-key"
	var srv *llmfake.Server
	cfg := llmconfig.Config{Provider: provider, APIKey: key, Model: "bench-model", Timeout: time.Minute}
	if provider == llmconfig.ProviderOpenAI {
		srv = llmfake.NewOpenAI(b, key, llmfake.Turn{Text: "ok"})
		cfg.BaseURL = srv.URL + "/v1"
	} else {
		srv = llmfake.NewAnthropic(b, key, llmfake.Turn{Text: "ok"})
		cfg.BaseURL = srv.URL
	}
	llm, err := New(cfg, nil)
	require.NoError(b, err)
	_, err = llm.Complete(b.Context(), &Request{Model: cfg.Model, Messages: []Message{{Role: "user", Content: "hi"}}, Tools: defs})
	require.NoError(b, err)
	reqs := srv.Requests()
	require.Len(b, reqs, 1)
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	require.Equal(b, names, reqs[0].ToolNames())
}

// benchLLM returns the provider's client with New's options (no retries), sending its requests to client.
func benchLLM(b *testing.B, provider string, client *benchLLMClient) Client {
	b.Helper()
	hc := &http.Client{Transport: client}
	cfg := llmconfig.Config{Provider: provider, APIKey: "bench-key", Model: "bench-model", Timeout: time.Minute}
	switch provider {
	case llmconfig.ProviderOpenAI:
		return &openaiLLM{cfg: cfg, client: openai.NewClient(openaioption.WithAPIKey(cfg.APIKey), openaioption.WithRequestTimeout(cfg.Timeout),
			openaioption.WithMaxRetries(0), openaioption.WithBaseURL("http://llm.invalid/v1/"), openaioption.WithHTTPClient(hc))}
	case llmconfig.ProviderAnthropic:
		return &anthropicLLM{cfg: cfg, client: anthropic.NewClient(anthropicoption.WithAPIKey(cfg.APIKey), anthropicoption.WithRequestTimeout(cfg.Timeout),
			anthropicoption.WithMaxRetries(0), anthropicoption.WithBaseURL("http://llm.invalid/"), anthropicoption.WithHTTPClient(hc))}
	}
	b.Fatalf("unknown provider %q", provider)
	return nil
}

// benchLLMClient answers every request with a minimal assistant message "ok", reading (and keeping) the
// request body so its encoding is part of the measured work.
type benchLLMClient struct {
	provider string
	lastBody []byte
}

const (
	benchOpenAIAnswer = `{"id": "chatcmpl-bench", "object": "chat.completion", "created": 1763800000, "model": "bench-model",
		"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok", "refusal": null}, "finish_reason": "stop", "logprobs": null}],
		"usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}}`
	benchAnthropicAnswer = `{"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench-model",
		"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": null,
		"usage": {"input_tokens": 12, "output_tokens": 1}}`
)

func (c *benchLLMClient) RoundTrip(req *http.Request) (*http.Response, error) {
	var buf bytes.Buffer
	if req.Body != nil {
		if _, err := buf.ReadFrom(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	c.lastBody = buf.Bytes()
	answer := benchOpenAIAnswer
	if c.provider == llmconfig.ProviderAnthropic {
		answer = benchAnthropicAnswer
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(answer)),
		ContentLength: int64(len(answer)), Request: req}, nil
}

// requestToolNames decodes the tools' names from a provider request body.
func requestToolNames(b *testing.B, provider string, body []byte) []string {
	b.Helper()
	var req struct {
		Tools []struct {
			Name     string `json:"name"` // Anthropic
			Function struct {
				Name string `json:"name"`
			} `json:"function"` // OpenAI
		} `json:"tools"`
	}
	require.NoError(b, json.Unmarshal(body, &req))
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
		if provider == llmconfig.ProviderOpenAI {
			names[i] = t.Function.Name
		}
		require.NotEmpty(b, names[i])
	}
	return names
}
