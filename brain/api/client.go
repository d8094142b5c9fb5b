package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
)

// Client talks to a brain over HTTP (the CLI uses it).
type Client struct {
	// BaseURL is the brain's URL, like http://127.0.0.1:8088.
	BaseURL string
	// Token is the bearer token.
	Token string
	// HTTP is the HTTP client. Defaults to one without a timeout (give requests a context deadline).
	HTTP *http.Client
}

// Run posts a run request. It returns the response (also for ok=false answers and HTTP errors, which come
// back as a response with Errors) and the HTTP status.
func (c *Client) Run(ctx context.Context, req *brain.RunParams) (*brain.RunResponse, int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, err
	}
	var resp brain.RunResponse
	status, err := c.do(ctx, http.MethodPost, "/brain/run", body, &resp)
	return &resp, status, err
}

// GetRun fetches a run.
func (c *Client) GetRun(ctx context.Context, id string) (*brain.RunResponse, int, error) {
	var resp brain.RunResponse
	status, err := c.do(ctx, http.MethodGet, "/brain/runs/"+id, nil, &resp)
	return &resp, status, err
}

// Approve approves a planned run.
func (c *Client) Approve(ctx context.Context, id string, wait bool, timeout time.Duration) (*brain.RunResponse, int, error) {
	body, _ := json.Marshal(map[string]any{"wait": wait, "wait_timeout_ms": timeout.Milliseconds()})
	var resp brain.RunResponse
	status, err := c.do(ctx, http.MethodPost, "/brain/runs/"+id+"/approve", body, &resp)
	return &resp, status, err
}

// Do sends a request with a JSON body (nil for none) and decodes the JSON answer into out; it returns the
// HTTP status.
func (c *Client) Do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	return c.do(ctx, method, path, data, out)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, r)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("error calling the brain at %s: %w", c.BaseURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("error reading the brain's answer: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("the brain answered %d with something that is not JSON: %.200s", resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}
