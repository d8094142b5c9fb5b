package integrationshandlers

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
)

// Health statuses.
const (
	statusOK       = "ok"
	statusDegraded = "degraded"
	statusDown     = "down"
)

// slowProvider is how long a health check may take before the provider counts as degraded.
const slowProvider = 3 * time.Second

type healthInput struct{}

type smsHealthOutput struct {
	Status        string    `json:"status"`
	Provider      string    `json:"provider"`
	Detail        string    `json:"detail"`
	AccountStatus string    `json:"account_status,omitempty"`
	AccountType   string    `json:"account_type,omitempty"`
	LatencyMS     int64     `json:"latency_ms"`
	CheckedAt     time.Time `json:"checked_at"`
}

// smsHealth checks the business pack's Twilio account: it fetches the Account resource
// (GET /2010-04-01/Accounts/{AccountSid}.json, basic auth) and reads its status. Nothing is sent.
func (p *pack) smsHealth(ctx context.Context, c *executor.Call, _ healthInput) (*smsHealthOutput, error) {
	sms := p.sms
	if sms.AccountSID == "" || sms.AuthToken == "" {
		return nil, executor.NotConfigured("no SMS provider is configured: the Twilio account and auth token are not set",
			[]string{businesspack.EnvTwilioAccountSID, businesspack.EnvTwilioAuthToken, businesspack.EnvSMSFrom},
			"Set "+businesspack.EnvTwilioAccountSID+" (AC...), "+businesspack.EnvTwilioAuthToken+" and "+businesspack.EnvSMSFrom+" from the Twilio console.")
	}
	if err := urlNotConfigured(businesspack.EnvTwilioBaseURL, sms.BaseURL); err != nil {
		return nil, err
	}
	out := &smsHealthOutput{Provider: "twilio", CheckedAt: time.Now().UTC()}
	start := time.Now()
	var account struct {
		SID          string `json:"sid"`
		Status       string `json:"status"`
		Type         string `json:"type"`
		FriendlyName string `json:"friendly_name"`
	}
	header := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(sms.AccountSID+":"+sms.AuthToken))}}
	err := do(ctx, p.cfg.HTTPClient, apiRequest{
		provider: "Twilio", method: http.MethodGet,
		url:    sms.BaseURL + "/2010-04-01/Accounts/" + url.PathEscape(sms.AccountSID) + ".json",
		header: header,
		errorMessage: func(raw []byte) string {
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Message == "" {
				return ""
			}
			return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
		},
	}, &account)
	out.LatencyMS = time.Since(start).Milliseconds()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		pe, ok := asProviderError(err)
		if !ok {
			return nil, err
		}
		out.Status, out.Detail = statusDown, pe.Error()
		switch {
		case pe.refusedCredentials() || pe.Status == http.StatusNotFound:
			out.Detail += "; check " + businesspack.EnvTwilioAccountSID + " and " + businesspack.EnvTwilioAuthToken
		case pe.Status == http.StatusTooManyRequests:
			out.Status, out.Detail = statusDegraded, pe.Error()+"; Twilio is limiting requests"
		}
		return out, nil
	}
	out.AccountStatus, out.AccountType = account.Status, account.Type
	switch {
	case account.Status != "active":
		out.Status, out.Detail = statusDown, fmt.Sprintf("the Twilio account %s is %s: it cannot send", account.SID, account.Status)
	case sms.From == "":
		out.Status, out.Detail = statusDegraded, "the Twilio account is active but "+businesspack.EnvSMSFrom+" is not set, so nothing can be sent"
	case account.Type == "Trial":
		out.Status, out.Detail = statusDegraded, "the Twilio account is a trial: it can only text verified numbers"
	case time.Since(start) > slowProvider:
		out.Status, out.Detail = statusDegraded, fmt.Sprintf("Twilio answered, slowly (%d ms)", out.LatencyMS)
	default:
		out.Status, out.Detail = statusOK, fmt.Sprintf("the Twilio account %s is active", account.SID)
	}
	return out, nil
}

type emailHealthOutput struct {
	Status        string    `json:"status"`
	Provider      string    `json:"provider"`
	Detail        string    `json:"detail"`
	Server        string    `json:"server"`
	TLS           bool      `json:"tls"`
	Authenticated bool      `json:"authenticated"`
	LatencyMS     int64     `json:"latency_ms"`
	CheckedAt     time.Time `json:"checked_at"`
}

// emailHealth checks the business pack's SMTP server without sending: connect (TLS for smtps), EHLO,
// STARTTLS when offered, AUTH when the URL has credentials, QUIT.
func (p *pack) emailHealth(ctx context.Context, c *executor.Call, _ healthInput) (*emailHealthOutput, error) {
	if p.email.URL == "" {
		return nil, executor.NotConfigured("no email provider is configured: the SMTP server is not set",
			[]string{businesspack.EnvSMTPURL, businesspack.EnvEmailFrom},
			"Set "+businesspack.EnvSMTPURL+" (smtp://user:password@host:587 or smtps://...:465) and "+businesspack.EnvEmailFrom+".")
	}
	target, err := businesspack.ParseSMTPURL(p.email.URL)
	if err != nil {
		return nil, executor.NotConfigured(err.Error(), []string{businesspack.EnvSMTPURL},
			"Set "+businesspack.EnvSMTPURL+" to smtp://user:password@host:587 or smtps://user:password@host:465.")
	}
	out := &emailHealthOutput{Provider: "smtp", Server: target.Addr, CheckedAt: time.Now().UTC()}
	start := time.Now()
	status, detail := probeSMTP(ctx, target, out)
	out.LatencyMS = time.Since(start).Milliseconds()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case status != statusOK:
	case p.email.From == "":
		status, detail = statusDegraded, detail+"; but "+businesspack.EnvEmailFrom+" is not set, so nothing can be sent"
	case time.Since(start) > slowProvider:
		status, detail = statusDegraded, fmt.Sprintf("%s, slowly (%d ms)", detail, out.LatencyMS)
	}
	out.Status, out.Detail = status, detail
	return out, nil
}

// probeSMTP talks to the server as far as a send would before MAIL FROM, then says goodbye.
func probeSMTP(ctx context.Context, t businesspack.SMTPServer, out *emailHealthOutput) (status, detail string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return statusDown, fmt.Sprintf("cannot connect to %s: %v", t.Addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if t.ImplicitTLS {
		tc := tls.Client(conn, &tls.Config{ServerName: t.Host})
		if err := tc.HandshakeContext(ctx); err != nil {
			return statusDown, fmt.Sprintf("the TLS handshake with %s failed: %v", t.Addr, err)
		}
		conn, out.TLS = tc, true
	}
	c, err := smtp.NewClient(conn, t.Host)
	if err != nil {
		return smtpReplyStatus(err), fmt.Sprintf("%s did not greet as an SMTP server: %v", t.Addr, err)
	}
	defer c.Close()
	hello, _ := os.Hostname()
	if err := c.Hello(cmp.Or(hello, "localhost")); err != nil {
		return smtpReplyStatus(err), fmt.Sprintf("%s refused EHLO: %v", t.Addr, err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !t.ImplicitTLS {
		if err := c.StartTLS(&tls.Config{ServerName: t.Host}); err != nil {
			return statusDown, fmt.Sprintf("STARTTLS with %s failed: %v", t.Addr, err)
		}
		out.TLS = true
	}
	if t.User != nil {
		if ok, _ := c.Extension("AUTH"); !ok {
			return statusDegraded, fmt.Sprintf("%s offers no AUTH, so the credentials in %s cannot be used", t.Addr, businesspack.EnvSMTPURL)
		}
		password, _ := t.User.Password()
		// PlainAuth sends credentials only over TLS or to localhost, as sending mail does.
		if err := c.Auth(smtp.PlainAuth("", t.User.Username(), password, t.Host)); err != nil {
			var te *textproto.Error
			if errors.As(err, &te) && te.Code/100 == 4 {
				return statusDegraded, fmt.Sprintf("%s refused the login for now: %v", t.Addr, err)
			}
			return statusDown, fmt.Sprintf("%s did not accept the login in %s: %v", t.Addr, businesspack.EnvSMTPURL, err)
		}
		out.Authenticated = true
	}
	_ = c.Quit()
	detail = fmt.Sprintf("%s answered", t.Addr)
	if out.TLS {
		detail += " over TLS"
	}
	if out.Authenticated {
		detail += " and accepted the login"
	}
	return statusOK, detail
}

// smtpReplyStatus is degraded for a 4xx reply (try later) and down otherwise.
func smtpReplyStatus(err error) string {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code/100 == 4 {
		return statusDegraded
	}
	return statusDown
}
