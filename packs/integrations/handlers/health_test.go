package integrationshandlers_test

import (
	"net"
	"net/http"
	"testing"

	businesspack "github.com/gemhq/gem/packs/business"
	integrationspack "github.com/gemhq/gem/packs/integrations"
	"github.com/gemhq/gem/packs/integrations/handlers/integrationstest"
	"github.com/stretchr/testify/require"
)

type healthResult struct {
	Status        string `json:"status"`
	Provider      string `json:"provider"`
	Detail        string `json:"detail"`
	AccountStatus string `json:"account_status"`
	TLS           bool   `json:"tls"`
	Authenticated bool   `json:"authenticated"`
}

// TestSMSProviderHealth: the Twilio account is fetched (nothing is sent) and its state decides the status.
func TestSMSProviderHealth(t *testing.T) {
	t.Parallel()
	tw := integrationstest.NewTwilio()
	t.Cleanup(tw.Close)
	ctx, b := setupWith(t, integrationspack.Config{}, businesspack.Config{SMS: tw.Config()})
	check := func() healthResult {
		t.Helper()
		return ok[healthResult](t, b.run(t, ctx, "integrations.sms_provider.health", map[string]any{}))
	}

	h := check()
	require.Equal(t, "ok", h.Status, h.Detail)
	require.Equal(t, "twilio", h.Provider)
	require.Equal(t, "active", h.AccountStatus)
	require.Equal(t, 1, tw.Fetches())

	tw.SetAccount("active", "Trial")
	require.Equal(t, "degraded", check().Status)
	tw.SetAccount("suspended", "Full")
	h = check()
	require.Equal(t, "down", h.Status)
	require.Contains(t, h.Detail, "suspended")
	tw.SetAccount("active", "Full")

	tw.Fail(1, http.StatusTooManyRequests, 20429, "Too Many Requests")
	require.Equal(t, "degraded", check().Status)
	tw.Fail(1, http.StatusInternalServerError, 20500, "Internal Server Error")
	require.Equal(t, "down", check().Status)

	// Credentials Twilio refuses: down, saying which variables to check.
	cfg := tw.Config()
	cfg.AuthToken = "wrong"
	ctx, b = setupWith(t, integrationspack.Config{}, businesspack.Config{SMS: cfg})
	h = ok[healthResult](t, b.run(t, ctx, "integrations.sms_provider.health", map[string]any{}))
	require.Equal(t, "down", h.Status)
	require.Contains(t, h.Detail, "HTTP 401")
	require.Contains(t, h.Detail, "GEM_SMS_TWILIO_AUTH_TOKEN")
}

// TestEmailProviderHealth: connect, EHLO, AUTH and QUIT against an SMTP server; nothing is sent.
func TestEmailProviderHealth(t *testing.T) {
	t.Parallel()
	srv, err := integrationstest.NewSMTP()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ctx, b := setupWith(t, integrationspack.Config{}, businesspack.Config{Email: srv.Config()})
	h := ok[healthResult](t, b.run(t, ctx, "integrations.email_provider.health", map[string]any{}))
	require.Equal(t, "ok", h.Status, h.Detail)
	require.True(t, h.Authenticated)
	require.Equal(t, []string{"EHLO", "AUTH", "QUIT"}, srv.Commands())

	wrong := srv.Config()
	wrong.URL = "smtp://gem:wrong@" + srv.Addr
	noFrom := srv.Config()
	noFrom.From = ""
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	busy, err := integrationstest.NewSMTP()
	require.NoError(t, err)
	t.Cleanup(busy.Close)
	busy.Busy()
	for _, tt := range []struct {
		name   string
		url    string
		from   string
		status string
		detail string
	}{
		{"wrong password", wrong.URL, wrong.From, "down", "did not accept the login"},
		{"no sender", noFrom.URL, "", "degraded", "GEM_EMAIL_FROM"},
		{"nothing listening", "smtp://" + closed, "office@example.com", "down", "cannot connect"},
		{"busy", busy.Config().URL, "office@example.com", "degraded", "421"},
	} {
		ctx, b := setupWith(t, integrationspack.Config{}, businesspack.Config{Email: businesspack.SMTPConfig{URL: tt.url, From: tt.from}})
		h := ok[healthResult](t, b.run(t, ctx, "integrations.email_provider.health", map[string]any{}))
		require.Equal(t, tt.status, h.Status, "%s: %s", tt.name, h.Detail)
		require.Contains(t, h.Detail, tt.detail, tt.name)
	}
}
