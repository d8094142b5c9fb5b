package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gemhq/gem/llmconfig"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// anthropicMaxTokensDefault is used when GEM_LLM_MAX_TOKENS is unset (the Messages API requires a bound).
const anthropicMaxTokensDefault = 4096

// anthropicLLM speaks Anthropic's Messages API.
type anthropicLLM struct {
	client anthropic.Client
	cfg    llmconfig.Config
}

func newAnthropicLLM(cfg llmconfig.Config) *anthropicLLM {
	// One request per Complete: Retrying retries, so that every attempt is seen, counted and bounded.
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey), option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	return &anthropicLLM{client: anthropic.NewClient(opts...), cfg: cfg}
}

func (a *anthropicLLM) Provider() string     { return llmconfig.ProviderAnthropic }
func (a *anthropicLLM) DefaultModel() string { return a.cfg.Model }

func (a *anthropicLLM) Complete(ctx context.Context, req *Request) (*Response, error) {
	maxTokens := int64(anthropicMaxTokensDefault)
	if a.cfg.MaxTokens > 0 {
		maxTokens = int64(a.cfg.MaxTokens)
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: maxTokens}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	params.Messages = anthropicMessages(req.Messages)
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anthropicTool(t))
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}

	msg, err := a.client.Messages.New(ctx, params)
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			var body struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
			return nil, apiFailure(llmconfig.ProviderAnthropic, apiErr.StatusCode, headerOf(apiErr.Response), body.Error.Message, err)
		}
		return nil, transportFailure(llmconfig.ProviderAnthropic, err)
	}
	resp := &Response{StopReason: string(msg.StopReason), Usage: Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens}}
	var text []string
	for _, block := range msg.Content {
		switch block.Type {
		case "text":
			text = append(text, block.Text)
		case "tool_use":
			args := string(block.Input)
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: block.ID, Name: block.Name, Arguments: args})
		}
	}
	resp.Content = strings.Join(text, "\n")
	resp.scrubNUL()
	return resp, nil
}

// anthropicTool is a tool definition as the Messages API takes it (GET /brain/tools?format=anthropic shows the
// same).
func anthropicTool(t ToolDef) anthropic.ToolUnionParam {
	schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range t.Parameters {
		switch k {
		case "type":
		case "properties":
			schema.Properties = v
		case "required":
			schema.Required = toStrings(v)
		default:
			schema.ExtraFields[k] = v
		}
	}
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: t.Name, Description: param.NewOpt(t.Description), InputSchema: schema}}
}

// anthropicMessages converts a conversation: tool results become tool_result blocks of a user message
// (consecutive results share one), and assistant tool calls become tool_use blocks.
func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	var results []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(results) > 0 {
			out = append(out, anthropic.NewUserMessage(results...))
			results = nil
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			results = append(results, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError))
		case "user":
			flush()
			out = append(out, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		case "assistant":
			flush()
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				// tool_use input must be an object; arguments another provider left malformed become {}.
				var input map[string]any
				if json.Unmarshal([]byte(tc.Arguments), &input) != nil || input == nil {
					input = map[string]any{}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			if len(blocks) > 0 {
				out = append(out, anthropic.NewAssistantMessage(blocks...))
			}
		}
	}
	flush()
	return out
}

func toStrings(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, s := range v {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
