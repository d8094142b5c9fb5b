package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
)

// fakeTwilio speaks Twilio's Messages API (a form-encoded POST to
// /2010-04-01/Accounts/{AccountSid}/Messages.json with basic auth, answered 201 with the Message resource)
// and counts every message it accepted by body, so chaos can tell whether an SMS went out twice.
type fakeTwilio struct {
	sid, token string
	srv        *http.Server
	url        string

	mu     sync.Mutex
	bodies map[string]int
}

func newFakeTwilio() (*fakeTwilio, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeTwilio{sid: "AC" + randomHex(16), token: randomHex(16), bodies: map[string]int{}, url: "http://" + l.Addr().String()}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go func() { _ = f.srv.Serve(l) }()
	return f, nil
}

func (f *fakeTwilio) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status, code int, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": message, "status": status,
			"more_info": "https://www.twilio.com/docs/errors/" + itoa(code)})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/"+f.sid+"/Messages.json" {
		fail(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	if user, pass, ok := r.BasicAuth(); !ok || user != f.sid || pass != f.token {
		fail(http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || r.ParseForm() != nil {
		fail(http.StatusBadRequest, 20001, "Bad request")
		return
	}
	to, from, body := r.PostForm.Get("To"), r.PostForm.Get("From"), r.PostForm.Get("Body")
	if !strings.HasPrefix(to, "+") {
		fail(http.StatusBadRequest, 21211, "The 'To' number "+to+" is not a valid phone number.")
		return
	}
	f.mu.Lock()
	f.bodies[body]++
	f.mu.Unlock()
	sid := "SM" + randomHex(16)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"account_sid": f.sid, "api_version": "2010-04-01", "body": body, "direction": "outbound-api",
		"error_code": nil, "error_message": nil, "from": from, "num_media": "0", "num_segments": "1",
		"price": nil, "price_unit": "USD", "sid": sid, "status": "queued", "to": to,
		"uri": "/2010-04-01/Accounts/" + f.sid + "/Messages/" + sid + ".json",
	})
}

// sent returns how many times each body was accepted.
func (f *fakeTwilio) sent() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.bodies))
	for k, v := range f.bodies {
		out[k] = v
	}
	return out
}

// env configures an executor to send SMS through this server.
func (f *fakeTwilio) env() []string {
	return []string{"GEM_SMS_TWILIO_ACCOUNT_SID=" + f.sid, "GEM_SMS_TWILIO_AUTH_TOKEN=" + f.token,
		"GEM_SMS_FROM=+61400999888", "GEM_SMS_TWILIO_BASE_URL=" + f.url}
}

func (f *fakeTwilio) close() { _ = f.srv.Close() }

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
