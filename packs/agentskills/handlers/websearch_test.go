package agentskillshandlers_test

import (
	"net/http"
	"testing"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

type webSearchResult struct {
	Query    string  `json:"query"`
	Provider string  `json:"provider"`
	Answer   *string `json:"answer"`
	Count    int     `json:"count"`
	Results  []struct {
		Title     string   `json:"title"`
		URL       string   `json:"url"`
		Snippet   string   `json:"snippet"`
		Score     *float64 `json:"score"`
		Published *string  `json:"published"`
	} `json:"results"`
}

func TestWebSearchTavily(t *testing.T) {
	t.Parallel()
	fake := newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		f.expect(r.Method == http.MethodPost, "method %s, want POST", r.Method)
		f.expect(r.URL.Path == "/search", "path %s", r.URL.Path)
		f.expect(r.Header.Get("Authorization") == "Bearer tvly-test", "Authorization %q", r.Header.Get("Authorization"))
		f.expect(r.Header.Get("Content-Type") == "application/json", "Content-Type %q", r.Header.Get("Content-Type"))
		body := f.decodeBody(r)
		f.expect(body["query"] == "roof repair cost Sydney", "query %v", body["query"])
		f.expect(body["max_results"] == 2.0, "max_results %v", body["max_results"])
		f.expect(body["search_depth"] == "basic", "search_depth %v", body["search_depth"])
		writeJSON(w, http.StatusOK, map[string]any{
			"query":  body["query"],
			"answer": nil,
			"images": []any{},
			"results": []any{
				map[string]any{"title": "Roof repair costs 2025", "url": "https://example.com/costs", "content": "A typical repair costs $400 to $1,200.", "score": 0.91, "raw_content": nil},
				map[string]any{"title": "Finding a roofer", "url": "https://example.org/roofer", "content": "Ask for three quotes.", "score": 0.55, "raw_content": nil, "published_date": "Mon, 03 Mar 2025 10:00:00 GMT"},
			},
			"response_time": 1.05,
		})
	})
	ctx, b := setup(t, agentskillspack.Config{WebSearch: agentskillspack.WebSearchConfig{URL: fake.URL + "/search", APIKey: "tvly-test"}})

	var got webSearchResult
	r := b.succeed(t, ctx, "web.search", `{"query": " roof repair cost Sydney ", "max_results": 2}`, &got)
	require.Equal(t, "tavily", got.Provider)
	require.Equal(t, "roof repair cost Sydney", got.Query)
	require.Nil(t, got.Answer)
	require.Equal(t, 2, got.Count)
	require.Equal(t, "Roof repair costs 2025", got.Results[0].Title)
	require.Equal(t, "https://example.com/costs", got.Results[0].URL)
	require.Equal(t, "A typical repair costs $400 to $1,200.", got.Results[0].Snippet)
	require.Equal(t, 0.91, *got.Results[0].Score)
	require.Nil(t, got.Results[0].Published)
	require.Equal(t, "Mon, 03 Mar 2025 10:00:00 GMT", *got.Results[1].Published)
	require.Empty(t, r.Effects.DBWrites)
	require.Empty(t, r.Effects.Outside, "a search is a read")
	require.Equal(t, 1, fake.checked(t))
}

func TestWebSearchBrave(t *testing.T) {
	t.Parallel()
	fake := newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		f.expect(r.Method == http.MethodGet, "method %s, want GET", r.Method)
		f.expect(r.URL.Path == "/res/v1/web/search", "path %s", r.URL.Path)
		f.expect(r.URL.Query().Get("q") == "dragon lore & legends", "q %q", r.URL.Query().Get("q"))
		f.expect(r.URL.Query().Get("count") == "5", "count %q", r.URL.Query().Get("count"))
		f.expect(r.Header.Get("X-Subscription-Token") == "brave-test", "X-Subscription-Token %q", r.Header.Get("X-Subscription-Token"))
		f.expect(r.Header.Get("Accept") == "application/json", "Accept %q", r.Header.Get("Accept"))
		writeJSON(w, http.StatusOK, map[string]any{
			"type":  "search",
			"query": map[string]any{"original": r.URL.Query().Get("q")},
			"web": map[string]any{"type": "search", "results": []any{
				map[string]any{"title": "<strong>Dragon</strong> lore", "url": "https://example.com/dragons",
					"description": "Everything about <strong>dragons</strong> &amp; their hoards.", "age": "2 days ago", "type": "search_result"},
			}},
		})
	})
	ctx, b := setup(t, agentskillspack.Config{WebSearch: agentskillspack.WebSearchConfig{
		Provider: "brave", URL: fake.URL + "/res/v1/web/search", APIKey: "brave-test",
	}})

	var got webSearchResult
	b.succeed(t, ctx, "web.search", `{"query": "dragon lore & legends"}`, &got)
	require.Equal(t, "brave", got.Provider)
	require.Equal(t, 1, got.Count)
	require.Equal(t, "Dragon lore", got.Results[0].Title, "highlighting removed")
	require.Equal(t, "Everything about dragons & their hoards.", got.Results[0].Snippet)
	require.Equal(t, "2 days ago", *got.Results[0].Published)
	require.Nil(t, got.Results[0].Score)
	require.Equal(t, 1, fake.checked(t))
}

func TestWebSearchProviderErrors(t *testing.T) {
	t.Parallel()
	status := make(chan int, 1)
	fake := newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		s := <-status
		if s == http.StatusOK {
			_, _ = w.Write([]byte(`<html>not json</html>`))
			return
		}
		writeJSON(w, s, map[string]any{"detail": map[string]any{"error": "nope"}})
	})
	ctx, b := setup(t, agentskillspack.Config{WebSearch: agentskillspack.WebSearchConfig{URL: fake.URL, APIKey: "tvly-test"}})

	status <- http.StatusUnauthorized
	d := requireFailed(t, b.call(t, ctx, "web.search", `{"query": "x"}`), registry.StatusFailed, registry.CodeHandlerError)
	require.Equal(t, "credentials_refused", d["reason"])

	status <- http.StatusOK
	d = requireFailed(t, b.call(t, ctx, "web.search", `{"query": "x"}`), registry.StatusFailed, registry.CodeHandlerError)
	require.Equal(t, "malformed_provider_response", d["reason"])
	require.Equal(t, "<html>not json</html>", d["body"])

	// A provider that is down is retried by River; with one attempt allowed the call ends at once.
	status <- http.StatusServiceUnavailable
	r := b.callOnce(t, ctx, "web.search", `{"query": "x"}`)
	requireFailed(t, r, registry.StatusFailed, registry.CodeRetriesExhausted)
	require.Contains(t, r.Error.Message, "HTTP 503")
	require.Equal(t, 3, fake.checked(t))
}

func TestWebSearchNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{})
	d := requireNotConfigured(t, b.call(t, ctx, "web.search", `{"query": "x"}`), "GEM_WEB_SEARCH_API_KEY")
	require.Contains(t, d.NextSteps[1], "GEM_WEB_SEARCH_PROVIDER")
	require.Contains(t, d.NextSteps[2], "GEM_WEB_SEARCH_URL")

	ctx, b = setup(t, agentskillspack.Config{WebSearch: agentskillspack.WebSearchConfig{Provider: "bing", APIKey: "k"}})
	requireNotConfigured(t, b.call(t, ctx, "web.search", `{"query": "x"}`), "GEM_WEB_SEARCH_PROVIDER", "GEM_WEB_SEARCH_API_KEY")

	// An endpoint Main reported at start is not tried: the call names the variable.
	for _, env := range []map[string]string{
		{"GEM_WEB_SEARCH_URL": "search.example", "GEM_WEB_SEARCH_API_KEY": "k"},
		{"GEM_WEB_SEARCH_URL": "ftp://search.example/q", "GEM_WEB_SEARCH_API_KEY": "k", "GEM_WEB_SEARCH_PROVIDER": "brave"},
	} {
		ctx, b = setup(t, agentskillspack.ConfigFromEnv(func(k string) string { return env[k] }))
		d := requireNotConfigured(t, b.call(t, ctx, "web.search", `{"query": "x"}`), "GEM_WEB_SEARCH_URL", "GEM_WEB_SEARCH_API_KEY")
		require.Contains(t, d.Reason, `GEM_WEB_SEARCH_URL="`+env["GEM_WEB_SEARCH_URL"]+`" is not an http(s) URL`)
	}
}
