package llmtext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ExtractJSONObject returns the JSON object in a model's answer: the answer itself, the inside of a Markdown
// code fence, or the span from the first "{" to the last "}". It returns "" when there is no such span.
func ExtractJSONObject(text string) string {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "```") {
		if nl := strings.IndexByte(text, '\n'); nl >= 0 {
			text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text[nl+1:]), "```"))
		}
	}
	start, end := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}')
	if start < 0 || end < start {
		return ""
	}
	return text[start : end+1]
}

// compiled caches compiled schemas by name: each tool's answer schema is compiled once.
var compiled sync.Map // name → *jsonschema.Schema

func (s *Schema) compile() (*jsonschema.Schema, error) {
	if c, ok := compiled.Load(s.Name); ok {
		return c.(*jsonschema.Schema), nil
	}
	doc, err := json.Marshal(s.Doc)
	if err != nil {
		return nil, fmt.Errorf("error encoding schema %s: %w", s.Name, err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	url := "gem://llmtext/" + s.Name + ".json"
	if err := c.AddResource(url, bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("error compiling schema %s: %w", s.Name, err)
	}
	schema, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("error compiling schema %s: %w", s.Name, err)
	}
	compiled.Store(s.Name, schema)
	return schema, nil
}

// Decode checks an answer asked for with a schema and decodes it into out. It accepts the JSON object
// wrapped in a Markdown code fence or surrounded by prose (some models and servers add them), but nothing
// less than one complete object valid against the schema; otherwise it returns every problem found, for a
// receipt to show.
func (s *Schema) Decode(a Answer, out any) ([]string, error) {
	schema, err := s.compile()
	if err != nil {
		return nil, err
	}
	if a.Refusal != "" {
		return []string{"the model refused: " + Truncate(a.Refusal, 300)}, nil
	}
	limit := ""
	if a.Truncated {
		limit = " (the model stopped at its token limit)"
	}
	text := ExtractJSONObject(a.Text)
	if text == "" {
		if strings.TrimSpace(a.Text) == "" {
			return []string{"the answer is empty" + limit}, nil
		}
		return []string{"the answer holds no JSON object" + limit}, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{"the answer is not a JSON object: " + err.Error() + limit}, nil
	}
	if dec.More() {
		return []string{"the answer holds more than one JSON value"}, nil
	}
	if err := schema.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		return violations(ve), nil
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return []string{"the answer does not fit: " + err.Error()}, nil
	}
	return nil, nil
}

// violations lists the leaf errors of a validation error as "at /path: message".
func violations(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := e.InstanceLocation
			if at == "" {
				at = "/"
			}
			out = append(out, fmt.Sprintf("at %s: %s", at, e.Message))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return out
}

// maxDetailChars bounds the model's text copied into a receipt.
const maxDetailChars = 2000

// Malformed is the failure of a call whose model answered, but not with what was asked for (problems says
// how). It is not retried: the same prompt tends to get the same answer.
func Malformed(m Model, a Answer, problems []string) error {
	return &executor.Error{Code: registry.CodeHandlerError, Message: "the model's answer is not what was asked for: " + strings.Join(problems, "; "),
		Details: map[string]any{
			"reason":   "malformed_model_output",
			"provider": m.Provider(),
			"model":    m.Name(),
			"problems": problems,
			"answer":   Truncate(a.Text, maxDetailChars),
		}}
}

// Failure turns a failed request to the model into the call's ending: a refused key is handler_error
// naming GEM_LLM_API_KEY; a rate limit, timeout or server error is retried by River (the LLM tools only read
// and write the database, so running again is harmless); any other status is handler_error with the
// provider's answer.
func Failure(ctx context.Context, m Model, err error) error {
	provider := m.Provider()
	if ctx.Err() != nil {
		// The call's deadline passed (the executor reports a timeout) or the executor is stopping.
		return fmt.Errorf("error calling %s: %w", provider, err)
	}
	var he *HTTPError
	if !errors.As(err, &he) {
		return executor.Retryable(fmt.Errorf("error calling %s: %w", provider, err))
	}
	details := map[string]any{"provider": provider, "model": m.Name(), "status": he.Status, "body": Truncate(he.Body, maxDetailChars)}
	switch {
	case he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden:
		details["reason"] = "credentials_refused"
		return &executor.Error{Code: registry.CodeHandlerError, Details: details,
			Message: fmt.Sprintf("%s refused the API key (HTTP %d); check GEM_LLM_API_KEY", provider, he.Status)}
	case he.Status == http.StatusTooManyRequests || he.Status == http.StatusRequestTimeout || he.Status == http.StatusConflict || he.Status >= 500:
		return executor.Retryable(he)
	default:
		details["reason"] = "provider_error"
		return &executor.Error{Code: registry.CodeHandlerError, Details: details,
			Message: fmt.Sprintf("%s answered HTTP %d: %s", provider, he.Status, Truncate(he.Body, 300))}
	}
}
