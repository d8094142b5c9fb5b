package agentskillshandlers

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
)

const (
	defaultWebResults = 5
	// maxWebAnswerBytes bounds a search provider's answer.
	maxWebAnswerBytes = 8 << 20
)

// webSearchNotConfigured returns the not_configured error for a missing or invalid web search
// configuration, or nil.
func webSearchNotConfigured(c agentskillspack.WebSearchConfig, tool string) error {
	required := []string{agentskillspack.EnvWebSearchAPIKey}
	steps := []string{
		fmt.Sprintf("Set %s to your search provider's API key.", agentskillspack.EnvWebSearchAPIKey),
		fmt.Sprintf("Set %s to %q (the default, Tavily's API) or %q (Brave Search's API).", agentskillspack.EnvWebSearchProvider, agentskillspack.WebSearchTavily, agentskillspack.WebSearchBrave),
		fmt.Sprintf("Set %s only for another endpoint of the same format (defaults: %s, %s).", agentskillspack.EnvWebSearchURL, agentskillspack.DefaultTavilyURL, agentskillspack.DefaultBraveURL),
		"Restart the executor: it reads the configuration once, at start.",
	}
	if err := c.ProviderProblem(); err != nil {
		return executor.NotConfigured(fmt.Sprintf("%s needs a web search provider, but %v", tool, err),
			append([]string{agentskillspack.EnvWebSearchProvider}, required...), steps...)
	}
	if err := c.URLProblem(); err != nil {
		return executor.NotConfigured(fmt.Sprintf("%s needs a web search provider, but %v", tool, err),
			append([]string{agentskillspack.EnvWebSearchURL}, required...), steps...)
	}
	if c.APIKey == "" {
		return executor.NotConfigured(fmt.Sprintf("%s needs a web search provider, and none is configured: %s is not set", tool, agentskillspack.EnvWebSearchAPIKey), required, steps...)
	}
	return nil
}

// searchWeb asks the configured search provider and returns its results in one shape.
func (p *pack) searchWeb(ctx context.Context, c *executor.Call, in agentskillspack.SearchWebInput) (*agentskillspack.SearchWebOutput, error) {
	cfg := p.cfg.WebSearch
	if err := webSearchNotConfigured(cfg, c.Tool.Name); err != nil {
		return nil, err
	}
	query := strings.TrimSpace(in.Query)
	if query == "" {
		return nil, executor.Invalid("query is blank")
	}
	if in.MaxResults <= 0 {
		in.MaxResults = defaultWebResults
	}
	var results []agentskillspack.WebResult
	var answer *string
	var err error
	switch cfg.Provider {
	case agentskillspack.WebSearchBrave:
		results, err = p.braveSearch(ctx, query, in.MaxResults)
	default:
		results, answer, err = p.tavilySearch(ctx, query, in.MaxResults)
	}
	if err != nil {
		return nil, providerFailure(ctx, cfg.Provider, agentskillspack.EnvWebSearchAPIKey, err, true)
	}
	if len(results) > in.MaxResults {
		results = results[:in.MaxResults]
	}
	if results == nil {
		results = []agentskillspack.WebResult{}
	}
	return &agentskillspack.SearchWebOutput{Query: query, Provider: cfg.Provider, Answer: answer, Results: results, Count: len(results)}, nil
}

// tavilySearch speaks Tavily's search API: POST {url} {"query", "max_results", ...} with
// Authorization: Bearer {key}; the answer is {"query", "answer", "results": [{"title", "url", "content",
// "score", "published_date"}], "response_time"}.
func (p *pack) tavilySearch(ctx context.Context, query string, n int) ([]agentskillspack.WebResult, *string, error) {
	cfg := p.cfg.WebSearch
	body := map[string]any{
		"query":               query,
		"max_results":         n,
		"search_depth":        "basic",
		"include_answer":      false,
		"include_raw_content": false,
		"include_images":      false,
	}
	var res struct {
		Answer  *string `json:"answer"`
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Content       string   `json:"content"`
			Score         *float64 `json:"score"`
			PublishedDate *string  `json:"published_date"`
		} `json:"results"`
	}
	header := http.Header{"Authorization": {"Bearer " + cfg.APIKey}}
	if err := p.sendJSON(ctx, http.MethodPost, cfg.URL, header, body, &res, agentskillspack.WebSearchTavily, maxWebAnswerBytes); err != nil {
		return nil, nil, err
	}
	if res.Results == nil {
		return nil, nil, &malformedResponseError{Provider: agentskillspack.WebSearchTavily, Problem: `the answer has no "results" array`}
	}
	out := make([]agentskillspack.WebResult, 0, len(res.Results))
	for _, r := range res.Results {
		if r.URL == "" {
			continue
		}
		out = append(out, agentskillspack.WebResult{Title: r.Title, URL: r.URL, Snippet: r.Content, Score: r.Score, Published: nonEmpty(r.PublishedDate)})
	}
	if res.Answer != nil && strings.TrimSpace(*res.Answer) == "" {
		res.Answer = nil
	}
	return out, res.Answer, nil
}

// braveSearch speaks Brave Search's web search API: GET {url}?q={query}&count={n} with
// X-Subscription-Token: {key}; the answer is {"web": {"results": [{"title", "url", "description", "age"}]}}.
func (p *pack) braveSearch(ctx context.Context, query string, n int) ([]agentskillspack.WebResult, error) {
	cfg := p.cfg.WebSearch
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("error parsing %s: %w", agentskillspack.EnvWebSearchURL, err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(min(n, 20)))
	u.RawQuery = q.Encode()
	var res struct {
		Web *struct {
			Results []struct {
				Title       string  `json:"title"`
				URL         string  `json:"url"`
				Description string  `json:"description"`
				Age         *string `json:"age"`
			} `json:"results"`
		} `json:"web"`
	}
	header := http.Header{"X-Subscription-Token": {cfg.APIKey}}
	if err := p.sendJSON(ctx, http.MethodGet, u.String(), header, nil, &res, agentskillspack.WebSearchBrave, maxWebAnswerBytes); err != nil {
		return nil, err
	}
	if res.Web == nil {
		// Brave leaves "web" out when nothing was found.
		return []agentskillspack.WebResult{}, nil
	}
	out := make([]agentskillspack.WebResult, 0, len(res.Web.Results))
	for _, r := range res.Web.Results {
		if r.URL == "" {
			continue
		}
		out = append(out, agentskillspack.WebResult{Title: stripTags(r.Title), URL: r.URL, Snippet: stripTags(r.Description), Published: nonEmpty(r.Age)})
	}
	return out, nil
}

var htmlTag = regexp.MustCompile(`<[^>]*>`)

// stripTags removes the highlighting markup (<strong>) Brave puts in titles and descriptions.
func stripTags(s string) string {
	return strings.TrimSpace(html.UnescapeString(htmlTag.ReplaceAllString(s, "")))
}

func nonEmpty(s *string) *string {
	if s == nil || strings.TrimSpace(*s) == "" {
		return nil
	}
	return s
}
