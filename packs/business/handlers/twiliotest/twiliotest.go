// Package twiliotest is a fake of Twilio's Messages API for tests and harnesses: a form-encoded POST to
// /2010-04-01/Accounts/{AccountSid}/Messages.json with basic auth, answered 201 with the Message resource,
// or with Twilio's error body. It keeps every message it accepted. A To number that is not in E.164 form,
// and +61400000000, are refused as invalid (Twilio error 21211).
package twiliotest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"

	businesspack "github.com/gemhq/gem/packs/business"
)

// From is the sender Env configures.
const From = "+61400999888"

// Server is a running fake. Close it when done.
type Server struct {
	*httptest.Server
	AccountSID, AuthToken string

	mu       sync.Mutex
	messages []url.Values
}

// New starts a fake on a loopback port with fresh credentials.
func New() *Server {
	s := &Server{AccountSID: "AC" + randomHex(16), AuthToken: randomHex(16)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Messages returns the form of every message accepted, in order.
func (s *Server) Messages() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.messages...)
}

// Env configures an executor process to send SMS through this fake.
func (s *Server) Env() []string {
	return []string{businesspack.EnvTwilioAccountSID + "=" + s.AccountSID, businesspack.EnvTwilioAuthToken + "=" + s.AuthToken,
		businesspack.EnvSMSFrom + "=" + From, businesspack.EnvTwilioBaseURL + "=" + s.URL}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status, code int, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": message,
			"more_info": "https://www.twilio.com/docs/errors/" + strconv.Itoa(code), "status": status})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/"+s.AccountSID+"/Messages.json" {
		fail(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	if user, pass, ok := r.BasicAuth(); !ok || user != s.AccountSID || pass != s.AuthToken {
		fail(http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.ParseForm() != nil {
		fail(http.StatusBadRequest, 20001, "Bad request")
		return
	}
	to, from, body := r.PostForm.Get("To"), r.PostForm.Get("From"), r.PostForm.Get("Body")
	if to == "+61400000000" || !strings.HasPrefix(to, "+") {
		fail(http.StatusBadRequest, 21211, "The 'To' number "+to+" is not a valid phone number.")
		return
	}
	s.mu.Lock()
	s.messages = append(s.messages, r.PostForm)
	s.mu.Unlock()
	sid := "SM" + randomHex(16)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"account_sid": s.AccountSID, "api_version": "2010-04-01", "body": body, "date_created": "Thu, 24 Aug 2023 05:01:45 +0000",
		"date_sent": nil, "date_updated": "Thu, 24 Aug 2023 05:01:45 +0000", "direction": "outbound-api",
		"error_code": nil, "error_message": nil, "from": from, "messaging_service_sid": nil, "num_media": "0",
		"num_segments": "1", "price": nil, "price_unit": "USD", "sid": sid, "status": "queued",
		"subresource_uris": map[string]string{"media": "/2010-04-01/Accounts/" + s.AccountSID + "/Messages/" + sid + "/Media.json"},
		"to":               to, "uri": "/2010-04-01/Accounts/" + s.AccountSID + "/Messages/" + sid + ".json",
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
