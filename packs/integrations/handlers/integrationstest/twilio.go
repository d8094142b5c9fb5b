package integrationstest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	businesspack "github.com/gemhq/gem/packs/business"
)

// Twilio fakes Twilio's Account resource: GET /2010-04-01/Accounts/{AccountSid}.json with basic auth,
// answered with the account (its status and type settable) or Twilio's error body.
type Twilio struct {
	*httptest.Server
	AccountSID, AuthToken string

	faults
	mu           sync.Mutex
	status, kind string
	fetches      int
}

// NewTwilio starts a fake of an active, full (paid) account.
func NewTwilio() *Twilio {
	t := &Twilio{AccountSID: "AC" + randomID(16), AuthToken: randomID(16), status: "active", kind: "Full"}
	t.Server = httptest.NewServer(http.HandlerFunc(t.serve))
	return t
}

// Config is the business pack's SMS configuration for this fake.
func (t *Twilio) Config() businesspack.TwilioConfig {
	return businesspack.TwilioConfig{AccountSID: t.AccountSID, AuthToken: t.AuthToken, From: "+61400999888", BaseURL: t.URL}
}

// SetAccount sets the account's status (active, suspended, closed) and type (Full, Trial).
func (t *Twilio) SetAccount(status, kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status, t.kind = status, kind
}

// Fetches counts the account fetches answered.
func (t *Twilio) Fetches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fetches
}

// Fail answers the next n requests with status and Twilio's error body with code.
func (t *Twilio) Fail(n, status, code int, message string) {
	t.add("", "/", n, status, `{"code": `+strconv.Itoa(code)+`, "message": "`+message+`", "more_info": "https://www.twilio.com/docs/errors/`+
		strconv.Itoa(code)+`", "status": `+strconv.Itoa(status)+`}`, nil)
}

func (t *Twilio) fail(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{"code": code, "message": message, "more_info": "https://www.twilio.com/docs/errors/" + strconv.Itoa(code), "status": status})
}

func (t *Twilio) serve(w http.ResponseWriter, r *http.Request) {
	if user, pass, ok := r.BasicAuth(); !ok || user != t.AccountSID || pass != t.AuthToken {
		t.fail(w, http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	if t.faults.serve(w, r) {
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/2010-04-01/Accounts/"+t.AccountSID+".json" {
		t.fail(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	t.mu.Lock()
	t.fetches++
	status, kind := t.status, t.kind
	t.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"sid": t.AccountSID, "owner_account_sid": t.AccountSID, "friendly_name": "GEM test account", "status": status, "type": kind,
		"auth_token": t.AuthToken, "date_created": "Thu, 01 Feb 2024 00:00:00 +0000", "date_updated": "Thu, 01 Feb 2024 00:00:00 +0000",
		"uri": "/2010-04-01/Accounts/" + t.AccountSID + ".json",
	})
}
