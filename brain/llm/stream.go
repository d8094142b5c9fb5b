package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// Both adapters ask for the answer as a stream of server-sent events and accumulate it with their SDK's
// accumulator, telling Request.OnText the text as it comes (docs/durable-runs.md#text-as-it-is-written). An
// attempt whose stream breaks before the answer's end is a failed attempt like one with no answer: retried
// within the step's deadline, and recorded.

// isEventStream says whether an answer is a stream; a JSON answer is a whole one (a compatible server that
// does not stream). Without an answer (the request failed) the stream's error says why.
func isEventStream(res *http.Response) bool {
	if res == nil {
		return true
	}
	media, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return media != "application/json" && !strings.HasSuffix(media, "+json")
}

// readWhole reads a whole (not streamed) answer into v.
func readWhole(res *http.Response, v any) error {
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("error reading the answer: %w", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the answer is not the JSON expected: %w", err)
	}
	return nil
}

// brokenStream is a stream that ended, or could not be read, before its answer did (after events events):
// a failure with no answer, which may pass (retried).
func brokenStream(provider string, events int, err error) *failure {
	return &failure{provider: provider, message: fmt.Sprintf("the answer's stream broke after %d events: %v", events, err), err: err,
		timeout: errors.Is(err, context.DeadlineExceeded)}
}
