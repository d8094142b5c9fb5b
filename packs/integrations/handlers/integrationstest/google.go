package integrationstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// GoogleAdsVersion is the Google Ads API version the fake serves.
const GoogleAdsVersion = "v24"

// DriveFile is a file in the fake Drive.
type DriveFile struct {
	ID, Name, MimeType string
	Size               int64
	Trashed            bool
	Content            string
}

// AnalyticsDay is one day of the fake GA4 property.
type AnalyticsDay struct {
	Date                       string // YYYY-MM-DD
	Sessions, Users, KeyEvents int
}

// AdsDay is one day of the fake ad accounts (Google Ads and Meta alike).
type AdsDay struct {
	Date        string // YYYY-MM-DD
	Spend       float64
	Clicks      int
	Impressions int
	Conversions float64
}

// Google fakes Google's OAuth token endpoint (/token), Drive v3 files.list (/drive/v3/files), the
// Analytics Data API's runReport (/v1beta/properties/{id}:runReport) and the Google Ads API's searchStream
// (/{version}/customers/{id}/googleAds:searchStream). An access token is minted from the refresh token
// at /token and accepted as Authorization: Bearer.
type Google struct {
	*httptest.Server
	ClientID, ClientSecret, RefreshToken string
	PropertyID, DeveloperToken           string
	CustomerID, LoginCustomerID          string

	faults
	mu          sync.Mutex
	tokens      map[string]bool
	Files       []DriveFile
	Analytics   []AnalyticsDay
	Ads         []AdsDay
	queries     []string
	tokenMinted int
}

// NewGoogle starts a fake with fresh credentials.
func NewGoogle() *Google {
	g := &Google{ClientID: randomID(8) + ".apps.googleusercontent.com", ClientSecret: randomID(12), RefreshToken: "1//" + randomID(16),
		PropertyID: "31415926", DeveloperToken: randomID(11), CustomerID: "1234567890", LoginCustomerID: "9876543210", tokens: map[string]bool{}}
	g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
	return g
}

// Config sets the pack's Google, GA4 and Google Ads configuration to this fake.
func (g *Google) Config(cfg *integrationspack.Config) {
	cfg.Google = integrationspack.GoogleConfig{ClientID: g.ClientID, ClientSecret: g.ClientSecret, RefreshToken: g.RefreshToken,
		TokenURL: g.URL + "/token", DriveBaseURL: g.URL}
	cfg.GA4 = integrationspack.GA4Config{PropertyID: g.PropertyID, BaseURL: g.URL}
	cfg.GoogleAds = integrationspack.GoogleAdsConfig{DeveloperToken: g.DeveloperToken, CustomerID: "123-456-7890", LoginCustomerID: g.LoginCustomerID,
		BaseURL: g.URL, APIVersion: GoogleAdsVersion}
}

// Queries returns the Drive q parameters and Google Ads queries received, in order.
func (g *Google) Queries() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.queries...)
}

// TokensMinted counts the access tokens /token gave out.
func (g *Google) TokensMinted() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tokenMinted
}

// Fail answers the next n requests to paths starting with prefix with status and Google's error body.
func (g *Google) Fail(prefix string, n, status int, message string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": message, "status": googleStatus(status)}})
	g.add("", prefix, n, status, string(body), nil)
}

func googleStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	}
	return "INTERNAL"
}

func (g *Google) fail(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": googleStatus(status)}})
}

func (g *Google) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		g.token(w, r)
		return
	}
	g.mu.Lock()
	authorized := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	g.mu.Unlock()
	if !authorized {
		g.fail(w, http.StatusUnauthorized, "Request had invalid authentication credentials. Expected OAuth 2 access token.")
		return
	}
	if g.faults.serve(w, r) {
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/drive/v3/files":
		g.driveList(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1beta/properties/"+g.PropertyID+":runReport":
		g.runReport(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1beta/properties/"):
		g.fail(w, http.StatusForbidden, "User does not have sufficient permissions for this property.")
	case r.Method == http.MethodPost && r.URL.Path == "/"+GoogleAdsVersion+"/customers/"+g.CustomerID+"/googleAds:searchStream":
		g.searchStream(w, r)
	default:
		g.fail(w, http.StatusNotFound, "Requested entity was not found.")
	}
}

// token is the refresh_token grant (RFC 6749, section 6).
func (g *Google) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "refresh_token" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Invalid grant_type"})
		return
	}
	if r.PostForm.Get("client_id") != g.ClientID || r.PostForm.Get("client_secret") != g.ClientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "The OAuth client was not found."})
		return
	}
	if r.PostForm.Get("refresh_token") != g.RefreshToken {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "Bad Request"})
		return
	}
	tok := "ya29." + randomID(16)
	g.mu.Lock()
	g.tokens[tok] = true
	g.tokenMinted++
	g.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer",
		"scope": "https://www.googleapis.com/auth/drive.readonly"})
}

// driveQueryTerm is one term of a q the fake understands: name/fullText/mimeType contains or =, and
// trashed = false, joined with "and" (an "or" inside parentheses is kept as alternatives).
type driveQueryTerm struct {
	alternatives [][3]string // field, operator, value
}

// parseDriveQuery reads q, unescaping \' and \\ in string literals as Drive does.
func parseDriveQuery(q string) ([]driveQueryTerm, error) {
	var terms []driveQueryTerm
	i := 0
	skip := func() {
		for i < len(q) && q[i] == ' ' {
			i++
		}
	}
	word := func() string {
		skip()
		start := i
		for i < len(q) && q[i] != ' ' && q[i] != '(' && q[i] != ')' {
			i++
		}
		return q[start:i]
	}
	value := func() (string, error) {
		skip()
		if i >= len(q) {
			return "", fmt.Errorf("a value is missing at the end")
		}
		if q[i] != '\'' {
			return word(), nil
		}
		i++
		var b strings.Builder
		for i < len(q) && q[i] != '\'' {
			if q[i] == '\\' && i+1 < len(q) {
				i++
			}
			b.WriteByte(q[i])
			i++
		}
		if i >= len(q) {
			return "", fmt.Errorf("an unterminated string")
		}
		i++
		return b.String(), nil
	}
	clause := func() ([3]string, error) {
		field, op := word(), word()
		v, err := value()
		return [3]string{field, op, v}, err
	}
	for {
		skip()
		if i >= len(q) {
			break
		}
		var term driveQueryTerm
		if q[i] == '(' {
			i++
			for {
				c, err := clause()
				if err != nil {
					return nil, err
				}
				term.alternatives = append(term.alternatives, c)
				skip()
				if i < len(q) && q[i] == ')' {
					i++
					break
				}
				if w := word(); w != "or" {
					return nil, fmt.Errorf("expected or, found %q", w)
				}
			}
		} else {
			c, err := clause()
			if err != nil {
				return nil, err
			}
			term.alternatives = append(term.alternatives, c)
		}
		terms = append(terms, term)
		skip()
		if i < len(q) {
			if w := word(); w != "and" {
				return nil, fmt.Errorf("expected and, found %q", w)
			}
		}
	}
	return terms, nil
}

func (f DriveFile) matches(c [3]string) bool {
	field, op, v := c[0], c[1], c[2]
	switch field + " " + op {
	case "name contains":
		return strings.Contains(strings.ToLower(f.Name), strings.ToLower(v))
	case "fullText contains":
		return strings.Contains(strings.ToLower(f.Name+" "+f.Content), strings.ToLower(v))
	case "mimeType =":
		return f.MimeType == v
	case "mimeType contains":
		return strings.Contains(f.MimeType, v)
	case "trashed =":
		return strconv.FormatBool(f.Trashed) == v
	}
	return false
}

func (g *Google) driveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	g.mu.Lock()
	g.queries = append(g.queries, q)
	g.mu.Unlock()
	terms, err := parseDriveQuery(q)
	if err != nil {
		g.fail(w, http.StatusBadRequest, "Invalid Value: "+err.Error())
		return
	}
	size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if size < 1 || size > 1000 {
		size = 100
	}
	files := []map[string]any{}
	for _, f := range g.Files {
		keep := true
		for _, t := range terms {
			matched := false
			for _, alt := range t.alternatives {
				matched = matched || f.matches(alt)
			}
			keep = keep && matched
		}
		if keep && len(files) < size {
			files = append(files, map[string]any{"id": f.ID, "name": f.Name, "mimeType": f.MimeType, "size": strconv.FormatInt(f.Size, 10),
				"webViewLink": "https://drive.google.com/file/d/" + f.ID + "/view", "modifiedTime": "2024-06-01T10:00:00.000Z"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": files})
}

func (g *Google) runReport(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DateRanges []struct {
			StartDate string `json:"startDate"`
			EndDate   string `json:"endDate"`
		} `json:"dateRanges"`
		Dimensions []struct {
			Name string `json:"name"`
		} `json:"dimensions"`
		Metrics []struct {
			Name string `json:"name"`
		} `json:"metrics"`
		MetricAggregations []string `json:"metricAggregations"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.DateRanges) != 1 {
		g.fail(w, http.StatusBadRequest, "Invalid JSON payload or dateRanges.")
		return
	}
	values := map[string]func(d AnalyticsDay) int{
		"sessions": func(d AnalyticsDay) int { return d.Sessions }, "totalUsers": func(d AnalyticsDay) int { return d.Users },
		"keyEvents": func(d AnalyticsDay) int { return d.KeyEvents },
	}
	type header struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	var metricHeaders []header
	for _, m := range req.Metrics {
		if values[m.Name] == nil {
			g.fail(w, http.StatusBadRequest, "Field "+m.Name+" is not a valid metric.")
			return
		}
		metricHeaders = append(metricHeaders, header{m.Name, "TYPE_INTEGER"})
	}
	from, to := req.DateRanges[0].StartDate, req.DateRanges[0].EndDate
	type cell struct {
		Value string `json:"value"`
	}
	type row struct {
		DimensionValues []cell `json:"dimensionValues"`
		MetricValues    []cell `json:"metricValues"`
	}
	rows := []row{}
	totals := make([]int, len(req.Metrics))
	for _, d := range g.Analytics {
		if d.Date < from || d.Date > to {
			continue
		}
		day, _ := time.Parse(time.DateOnly, d.Date)
		rw := row{DimensionValues: []cell{{day.Format("20060102")}}}
		for i, m := range req.Metrics {
			v := values[m.Name](d)
			totals[i] += v
			rw.MetricValues = append(rw.MetricValues, cell{strconv.Itoa(v)})
		}
		rows = append(rows, rw)
	}
	resp := map[string]any{"dimensionHeaders": []header{{Name: "date"}}, "metricHeaders": metricHeaders, "rows": rows,
		"rowCount": len(rows), "metadata": map[string]any{"currencyCode": "AUD", "timeZone": "Australia/Sydney"}, "kind": "analyticsData#runReport"}
	if len(req.MetricAggregations) > 0 {
		total := row{DimensionValues: []cell{{"RESERVED_TOTAL"}}}
		for i, m := range req.Metrics {
			v := totals[i]
			if m.Name == "totalUsers" {
				v = v * 9 / 10 // users come back on several days: the period counts each once
			}
			total.MetricValues = append(total.MetricValues, cell{strconv.Itoa(v)})
		}
		resp["totals"] = []row{total}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (g *Google) searchStream(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("developer-token") != g.DeveloperToken {
		writeJSON(w, http.StatusUnauthorized, []any{map[string]any{"error": map[string]any{"code": 401, "status": "UNAUTHENTICATED",
			"message": "Request is missing required authentication credential.",
			"details": []any{map[string]any{"@type": "type.googleapis.com/google.ads.googleads." + GoogleAdsVersion + ".errors.GoogleAdsFailure",
				"errors": []any{map[string]any{"errorCode": map[string]string{"authenticationError": "DEVELOPER_TOKEN_INVALID"},
					"message": "The developer token is not valid."}}}}}}})
		return
	}
	if h := r.Header.Get("login-customer-id"); h != "" && h != g.LoginCustomerID {
		g.fail(w, http.StatusForbidden, "User doesn't have permission to access customer.")
		return
	}
	var req struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		g.fail(w, http.StatusBadRequest, "Invalid JSON payload.")
		return
	}
	g.mu.Lock()
	g.queries = append(g.queries, req.Query)
	g.mu.Unlock()
	var from, to string
	if _, err := fmt.Sscanf(req.Query[strings.Index(req.Query, "BETWEEN"):], "BETWEEN '%10s' AND '%10s'", &from, &to); err != nil {
		g.fail(w, http.StatusBadRequest, "Error in query: expected segments.date BETWEEN.")
		return
	}
	results := []map[string]any{}
	for _, d := range g.Ads {
		if d.Date < from || d.Date > to {
			continue
		}
		results = append(results, map[string]any{
			"customer": map[string]any{"resourceName": "customers/" + g.CustomerID, "currencyCode": "AUD"},
			"segments": map[string]any{"date": d.Date},
			"metrics": map[string]any{"costMicros": strconv.FormatInt(int64(d.Spend*1e6), 10), "clicks": strconv.Itoa(d.Clicks),
				"impressions": strconv.Itoa(d.Impressions), "conversions": d.Conversions},
		})
	}
	writeJSON(w, http.StatusOK, []any{map[string]any{"results": results,
		"fieldMask": "segments.date,customer.currencyCode,metrics.costMicros,metrics.clicks,metrics.impressions,metrics.conversions",
		"requestId": randomID(8)}})
}
