package llm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/internal/llmfake"
	"github.com/gemhq/gem/llmconfig"
	"github.com/stretchr/testify/require"
)

// streamClient is New's client for provider, asking fake.
func streamClient(t *testing.T, provider string, fake *llmfake.Server) Client {
	t.Helper()
	cfg := llmconfig.Config{Provider: provider, APIKey: "k", Model: "m", Timeout: 10 * time.Second, StepTimeout: 30 * time.Second}
	cfg.BaseURL = fake.URL
	if provider == llmconfig.ProviderOpenAI {
		cfg.BaseURL += "/v1"
	}
	c, err := New(cfg, nil)
	require.NoError(t, err)
	return c
}

func streamFake(t *testing.T, provider string, turns ...llmfake.Turn) *llmfake.Server {
	if provider == llmconfig.ProviderAnthropic {
		return llmfake.NewAnthropic(t, "k", turns...)
	}
	return llmfake.NewOpenAI(t, "k", turns...)
}

// TestStreamedAnswers: both adapters ask for a stream (OpenAI with stream_options.include_usage) and tell
// OnText the text as it comes, piece by piece, the pieces making the answer's Content; tool calls whose
// arguments come in pieces are whole in the answer; the tokens are counted. A server that answers whole
// instead is read as such, its text told at once. Before, both asked for whole answers: no text came
// before the end.
func TestStreamedAnswers(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			chunks := []string{"Checking ", "the rö", "of\x00 — ", "one moment."}
			calls := []llmfake.Call{{ID: "c1", Name: "os__create_task", Arguments: `{"title": "roof at 12 Ngaio St", "domain": "business"}`},
				{ID: "c2", Name: "os__health_check", Arguments: `{}`}}
			fake := streamFake(t, provider, llmfake.Turn{Chunks: chunks, Calls: calls, Gap: 20 * time.Millisecond}, llmfake.Turn{Text: "Whole."})
			c := streamClient(t, provider, fake)
			var pieces []string
			var attempts []int
			req := &Request{Model: "m", Messages: []Message{{Role: "user", Content: "fix the roof"}},
				Tools:     []ToolDef{{Name: "os__create_task", Parameters: map[string]any{"type": "object"}}, {Name: "os__health_check", Parameters: map[string]any{"type": "object"}}},
				OnText:    func(s string) { pieces = append(pieces, s) },
				OnAttempt: func(n int) { attempts = append(attempts, n) }}
			resp, err := c.Complete(context.Background(), req)
			require.NoError(t, err)
			require.Equal(t, []int{1}, attempts)
			want := strings.ReplaceAll(strings.Join(chunks, ""), "\x00", "\uFFFD")
			require.Equal(t, want, resp.Content)
			require.Equal(t, want, strings.Join(pieces, ""))
			require.Len(t, pieces, len(chunks), "one piece per streamed delta: %q", pieces)
			require.Len(t, resp.ToolCalls, 2)
			require.Equal(t, ToolCall{ID: "c1", Name: "os__create_task", Arguments: calls[0].Arguments}, resp.ToolCalls[0])
			require.Equal(t, "c2", resp.ToolCalls[1].ID)
			require.JSONEq(t, `{}`, resp.ToolCalls[1].Arguments)
			require.Positive(t, resp.Usage.InputTokens)
			require.EqualValues(t, 12, resp.Usage.OutputTokens)
			got := fake.Requests()
			require.True(t, got[0].Stream, "asked as a stream")
			require.True(t, got[0].IncludeUsage, "with its usage")

			// A server that cannot stream answers whole: the same answer, its text told once.
			fake.AnswerWhole()
			pieces = nil
			resp, err = c.Complete(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "user", Content: "again"}},
				OnText: func(s string) { pieces = append(pieces, s) }})
			require.NoError(t, err)
			require.Equal(t, "Whole.", resp.Content)
			require.Equal(t, []string{"Whole."}, pieces)
			require.Positive(t, resp.Usage.InputTokens)
		})
	}
}

// TestBrokenStreamIsAFailedAttempt: a stream cut mid-answer (the connection dropped after two pieces of
// text) is a failed attempt, retried within the step: OnRetry hears of it, OnAttempt of the next, whose text
// is the answer's.
func TestBrokenStreamIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{llmconfig.ProviderOpenAI, llmconfig.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			fake := streamFake(t, provider,
				llmfake.Turn{Chunks: []string{"Half ", "an ", "answer"}, CutAfter: 2},
				llmfake.Turn{Chunks: []string{"A whole ", "answer."}})
			c := streamClient(t, provider, fake)
			var pieces []string
			var attempts []int
			var retried []Attempt
			resp, err := c.Complete(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}},
				OnText:    func(s string) { pieces = append(pieces, s) },
				OnAttempt: func(n int) { attempts = append(attempts, n) },
				OnRetry:   func(a Attempt) { retried = append(retried, a) }})
			require.NoError(t, err)
			require.Equal(t, "A whole answer.", resp.Content)
			require.Equal(t, []int{1, 2}, attempts)
			require.Equal(t, []string{"Half ", "an ", "A whole ", "answer."}, pieces)
			require.Len(t, retried, 1)
			require.Equal(t, brain.EUNAVAILABLE, retried[0].Err.Code)
			require.Contains(t, retried[0].Err.Message, "stream broke")
		})
	}
}
