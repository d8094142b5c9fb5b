package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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

// Complete asks for the answer as a stream, telling req.OnText its text as it comes (text blocks joined by a
// line break, as the answer's Content joins them), and builds the answer with the SDK's accumulator; usage
// comes in message_start and message_delta. A server that answers the whole message is read as such.
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

	var raw *http.Response
	stream := a.client.Messages.NewStreaming(ctx, params, option.WithResponseInto(&raw))
	defer stream.Close()
	if err := stream.Err(); err != nil {
		return nil, anthropicFailure(err, 0)
	}
	if !isEventStream(raw) {
		var msg anthropic.Message
		if err := readWhole(raw, &msg); err != nil {
			return nil, transportFailure(llmconfig.ProviderAnthropic, err)
		}
		resp := anthropicResponse(&msg)
		req.text(resp.Content)
		return resp, nil
	}
	var msg anthropic.Message
	events, texts := 0, 0
	for stream.Next() {
		event := stream.Current()
		if err := msg.Accumulate(event); err != nil {
			return nil, brokenStream(llmconfig.ProviderAnthropic, events, err)
		}
		events++
		switch {
		case event.Type == "content_block_start" && event.ContentBlock.Type == "text":
			if texts++; texts > 1 {
				req.text("\n")
			}
			req.text(event.ContentBlock.Text)
		case event.Type == "content_block_delta" && event.Delta.Type == "text_delta":
			req.text(event.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, anthropicFailure(err, events)
	}
	if msg.StopReason == "" {
		return nil, brokenStream(llmconfig.ProviderAnthropic, events, errors.New("it ended without a stop_reason"))
	}
	return anthropicResponse(&msg), nil
}

// anthropicStreamStatus is the HTTP status Anthropic answers with each error type: an error that comes
// inside a stream (after its 200) is classified as that status would be (an overloaded_error mid-stream is
// retried as a 529 is).
var anthropicStreamStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest, "authentication_error": http.StatusUnauthorized,
	"billing_error": http.StatusPaymentRequired, "permission_error": http.StatusForbidden, "not_found_error": http.StatusNotFound,
	"request_too_large": http.StatusRequestEntityTooLarge, "rate_limit_error": http.StatusTooManyRequests,
	"api_error": http.StatusInternalServerError, "timeout_error": http.StatusGatewayTimeout, "overloaded_error": 529,
}

// anthropicFailure classifies a request's failure: the provider's error answer (before or, as an error event,
// inside its stream, after events events), or none.
func anthropicFailure(err error, events int) *failure {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		if events > 0 {
			return brokenStream(llmconfig.ProviderAnthropic, events, err)
		}
		return transportFailure(llmconfig.ProviderAnthropic, err)
	}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	status := apiErr.StatusCode
	if status < http.StatusBadRequest {
		if status = anthropicStreamStatus[body.Error.Type]; status == 0 {
			status = http.StatusInternalServerError
		}
	}
	return apiFailure(llmconfig.ProviderAnthropic, status, headerOf(apiErr.Response), body.Error.Message, err)
}

// anthropicResponse is a message as the brain keeps it.
func anthropicResponse(msg *anthropic.Message) *Response {
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
	return resp
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
