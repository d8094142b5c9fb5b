package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/gemhq/gem/llmconfig"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// openaiLLM speaks the OpenAI chat completions API (and the many servers compatible with it).
type openaiLLM struct {
	client openai.Client
	cfg    llmconfig.Config
}

func newOpenAILLM(cfg llmconfig.Config) *openaiLLM {
	// One request per Complete: Retrying retries, so that every attempt is seen, counted and bounded.
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	} else {
		opts = append(opts, option.WithAPIKey("none")) // local servers ignore it; the SDK wants one
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	return &openaiLLM{client: openai.NewClient(opts...), cfg: cfg}
}

func (o *openaiLLM) Provider() string     { return llmconfig.ProviderOpenAI }
func (o *openaiLLM) DefaultModel() string { return o.cfg.Model }

// Complete asks for the answer as a stream (stream_options.include_usage, so the last chunk counts the
// tokens), telling req.OnText its text as it comes, and builds the answer with the SDK's accumulator. A
// server that answers the whole completion instead of a stream (some compatible servers) is read as such.
func (o *openaiLLM) Complete(ctx context.Context, req *Request) (*Response, error) {
	params := o.params(req)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	var raw *http.Response
	stream := o.client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&raw))
	defer stream.Close()
	if err := stream.Err(); err != nil {
		return nil, openaiFailure(err)
	}
	if !isEventStream(raw) {
		var completion openai.ChatCompletion
		if err := readWhole(raw, &completion); err != nil {
			return nil, transportFailure(llmconfig.ProviderOpenAI, err)
		}
		return openaiResponse(req, &completion, true)
	}
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return nil, brokenStream(llmconfig.ProviderOpenAI, chunks, errors.New("a chunk does not continue the ones before it"))
		}
		chunks++
		for _, choice := range chunk.Choices {
			if choice.Index == 0 {
				req.text(choice.Delta.Content)
			}
		}
	}
	if err := stream.Err(); err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return nil, openaiFailure(err)
		}
		return nil, brokenStream(llmconfig.ProviderOpenAI, chunks, err)
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return nil, brokenStream(llmconfig.ProviderOpenAI, chunks, errors.New("it ended without a finish_reason"))
	}
	return openaiResponse(req, &acc.ChatCompletion, false)
}

// params is the request as the chat completions API takes it.
func (o *openaiLLM) params(req *Request) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case "tool":
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" {
				am.Content.OfString = param.NewOpt(m.Content)
			}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, openaiTool(t))
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	if o.cfg.MaxTokens > 0 {
		params.MaxTokens = param.NewOpt(int64(o.cfg.MaxTokens))
	}
	return params
}

// openaiFailure classifies a request's failure: the provider's error answer, or none.
func openaiFailure(err error) *failure {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiFailure(llmconfig.ProviderOpenAI, apiErr.StatusCode, headerOf(apiErr.Response), apiErr.Message, err)
	}
	return transportFailure(llmconfig.ProviderOpenAI, err)
}

// openaiResponse is a completion as the brain keeps it; whole says it came whole (not streamed), so its text
// is told to req.OnText at once.
func openaiResponse(req *Request, completion *openai.ChatCompletion, whole bool) (*Response, error) {
	if len(completion.Choices) == 0 {
		return nil, apiFailure(llmconfig.ProviderOpenAI, http.StatusOK, nil, "the answer has no choices", nil)
	}
	choice := completion.Choices[0]
	resp := &Response{
		Content:    choice.Message.Content,
		StopReason: choice.FinishReason,
		Usage:      Usage{InputTokens: completion.Usage.PromptTokens, OutputTokens: completion.Usage.CompletionTokens},
	}
	if whole {
		req.text(resp.Content)
	}
	if resp.Content == "" && choice.Message.Refusal != "" {
		resp.Content = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	resp.scrubNUL()
	return resp, nil
}

// openaiTool is a function definition as the chat completions API takes it (GET /brain/tools?format=openai
// shows the same).
func openaiTool(t ToolDef) openai.ChatCompletionToolUnionParam {
	def := shared.FunctionDefinitionParam{
		Name:        t.Name,
		Description: param.NewOpt(t.Description),
		Parameters:  shared.FunctionParameters(t.Parameters),
	}
	if t.Strict {
		def.Strict = param.NewOpt(true)
	}
	return openai.ChatCompletionFunctionTool(def)
}
