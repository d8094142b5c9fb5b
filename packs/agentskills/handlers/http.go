package agentskillshandlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// malformedResponseError is a provider's successful answer that is not the JSON its API documents.
type malformedResponseError struct {
	Provider string
	Problem  string
	Body     string
}

func (e *malformedResponseError) Error() string {
	return fmt.Sprintf("%s's answer is not what its API documents: %s", e.Provider, e.Problem)
}

// sendJSON makes a request with an optional JSON body and decodes a 2xx JSON answer into out. An answer
// with another status is a *providerHTTPError; an undecodable 2xx answer a *malformedResponseError.
func (p *pack) sendJSON(ctx context.Context, method, url string, header http.Header, body any, out any, provider string, maxBytes int64) error {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("error encoding request: %w", err)
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return fmt.Errorf("error building request: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBytes+1))
	if err != nil {
		return fmt.Errorf("error reading %s's answer: %w", provider, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return &providerHTTPError{Provider: provider, Status: res.StatusCode, Body: string(data)}
	}
	if int64(len(data)) > maxBytes {
		return &malformedResponseError{Provider: provider, Problem: fmt.Sprintf("the answer is larger than %d bytes", maxBytes)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &malformedResponseError{Provider: provider, Problem: "the answer is not valid JSON of the expected shape: " + err.Error(), Body: truncate(string(data), maxDetailChars)}
	}
	return nil
}
