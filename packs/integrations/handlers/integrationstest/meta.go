package integrationstest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"

	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// MetaVersion is the Graph API version the fake serves.
const MetaVersion = "v23.0"

// Meta fakes the Marketing API's insights edge of one ad account
// (GET /{version}/act_{id}/insights?fields=...&time_range=...&time_increment=1), paging two days at a time
// with paging.next links as the Graph API does. The token is sent as Authorization: Bearer.
type Meta struct {
	*httptest.Server
	AccessToken, AdAccountID string
	Days                     []AdsDay

	faults
	mu       sync.Mutex
	requests int
}

// NewMeta starts a fake with fresh credentials.
func NewMeta() *Meta {
	m := &Meta{AccessToken: "EAAB" + randomID(16), AdAccountID: "act_" + randomDigits(12)}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

// Config is the pack's Meta configuration for this fake.
func (m *Meta) Config() integrationspack.MetaConfig {
	return integrationspack.MetaConfig{AccessToken: m.AccessToken, AdAccountID: m.AdAccountID, BaseURL: m.URL, APIVersion: MetaVersion}
}

// Requests counts the requests that reached the fake.
func (m *Meta) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

// Fail answers the next n requests with status and a Graph API error of that code.
func (m *Meta) Fail(n, status, code int, message string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "OAuthException", "code": code, "fbtrace_id": randomID(6)}})
	m.add("", "/", n, status, string(body), nil)
}

func (m *Meta) fail(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": "OAuthException", "code": code, "fbtrace_id": randomID(6)}})
}

func (m *Meta) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.requests++
	m.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+m.AccessToken {
		m.fail(w, http.StatusBadRequest, 190, "Invalid OAuth access token - Cannot parse access token")
		return
	}
	if m.faults.serve(w, r) {
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/"+MetaVersion+"/"+m.AdAccountID+"/insights" {
		m.fail(w, http.StatusBadRequest, 100, "Unsupported get request. Object with ID does not exist")
		return
	}
	q := r.URL.Query()
	var tr struct {
		Since string `json:"since"`
		Until string `json:"until"`
	}
	if err := json.Unmarshal([]byte(q.Get("time_range")), &tr); err != nil || tr.Since == "" || tr.Until == "" {
		m.fail(w, http.StatusBadRequest, 100, "(#100) time_range must be a JSON object with since and until")
		return
	}
	if q.Get("time_increment") != "1" || !strings.Contains(q.Get("fields"), "spend") {
		m.fail(w, http.StatusBadRequest, 100, "(#100) the fake serves daily rows of spend")
		return
	}
	var rows []map[string]any
	for _, d := range m.Days {
		if d.Date < tr.Since || d.Date > tr.Until {
			continue
		}
		rows = append(rows, map[string]any{
			"spend": strconv.FormatFloat(d.Spend, 'f', 2, 64), "clicks": strconv.Itoa(d.Clicks), "impressions": strconv.Itoa(d.Impressions),
			"account_currency": "AUD", "date_start": d.Date, "date_stop": d.Date,
			"actions": []map[string]string{
				{"action_type": "link_click", "value": strconv.Itoa(d.Clicks)},
				{"action_type": "lead", "value": strconv.FormatFloat(d.Conversions, 'f', -1, 64)},
			},
		})
	}
	offset, _ := strconv.Atoi(q.Get("after"))
	const pageSize = 2
	end := min(offset+pageSize, len(rows))
	page := rows[min(offset, len(rows)):end]
	if page == nil {
		page = []map[string]any{}
	}
	resp := map[string]any{"data": page, "paging": map[string]any{"cursors": map[string]string{"before": "0", "after": strconv.Itoa(end)}}}
	if end < len(rows) {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("after", strconv.Itoa(end))
		resp["paging"].(map[string]any)["next"] = m.URL + r.URL.Path + "?" + next.Encode()
	}
	writeJSON(w, http.StatusOK, resp)
}
