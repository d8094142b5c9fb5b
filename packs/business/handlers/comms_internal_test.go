package businesshandlers

import (
	"mime"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

func TestSMSRecipient(t *testing.T) {
	t.Parallel()
	p := &pack{}
	p.region, p.regionErr = businesspack.Config{}.ResolvePhoneRegion()
	tests := []struct{ in, want string }{
		{"0412 345 678", "+61412345678"},
		{"(02) 9555 1234", "+61295551234"},
		{"+61 412-345-678", "+61412345678"},
		{"0061 412 345 678", "+61412345678"},
		{"+1 (415) 555-0100", "+14155550100"},
		{"61412345678", "+61412345678"},
	}
	for _, tt := range tests {
		got, err := p.smsRecipient(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"0412", "+1234567890123456", "000"} {
		_, err := p.smsRecipient(bad)
		require.Error(t, err, bad)
	}
	for _, cfg := range []businesspack.Config{{PhoneRegion: "NZ"}, {SMS: businesspack.TwilioConfig{CountryCode: "64"}}, {PhoneRegion: "NZ", SMS: businesspack.TwilioConfig{CountryCode: "64"}}} {
		p.region, p.regionErr = cfg.ResolvePhoneRegion()
		got, err := p.smsRecipient("021 555 0100")
		require.NoError(t, err)
		require.Equal(t, "+64215550100", got, "another region: %+v", cfg)
	}
	for cfg, says := range map[*businesspack.Config]string{
		{PhoneRegion: "AU", SMS: businesspack.TwilioConfig{CountryCode: "64"}}: "disagree",
		{SMS: businesspack.TwilioConfig{CountryCode: "999"}}:                   "no country's calling code",
		{PhoneRegion: "XX"}: "GEM_PHONE_REGION",
	} {
		p.region, p.regionErr = cfg.ResolvePhoneRegion()
		_, err := p.smsRecipient("021 555 0100")
		require.ErrorContains(t, err, says)
		require.Equal(t, registry.CodeNotConfigured, err.(*executor.Error).Code)
	}
}

func TestSMTPConfigParse(t *testing.T) {
	t.Parallel()
	s, err := parseSMTP(businesspack.SMTPConfig{URL: "smtp://user%40acme:p%40ss@smtp.example.com", From: "Acme <office@acme.example>"})
	require.NoError(t, err)
	require.Equal(t, "smtp.example.com:587", s.Addr)
	require.False(t, s.ImplicitTLS)
	require.Equal(t, "user@acme", s.User.Username())
	password, _ := s.User.Password()
	require.Equal(t, "p@ss", password)
	require.Equal(t, "office@acme.example", s.from.Address)

	s, err = parseSMTP(businesspack.SMTPConfig{URL: "smtps://mail.example.com", From: "office@acme.example"})
	require.NoError(t, err)
	require.Equal(t, "mail.example.com:465", s.Addr)
	require.True(t, s.ImplicitTLS)
	require.Nil(t, s.User)

	for _, c := range []businesspack.SMTPConfig{
		{URL: "http://mail.example.com", From: "a@b.example"},
		{URL: "smtp://", From: "a@b.example"},
		{URL: "smtp://mail.example.com", From: "not an address"},
	} {
		_, err := parseSMTP(c)
		require.Error(t, err, c.URL)
	}
	_, err = parseSMTP(businesspack.SMTPConfig{URL: "smtp://user:se cret%zz@host", From: "a@b.example"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "se cret", "the password is never repeated")
}

func TestEmailMessage(t *testing.T) {
	t.Parallel()
	from := &mail.Address{Name: "Acme Roofing", Address: "office@acme.example"}
	m := outgoingEmail{
		messageID: "abc@acme.example",
		to:        &mail.Address{Address: "maria@example.com"},
		subject:   "Quote ready\r\nBcc: everyone@example.com",
		body:      "Línea uno\nline two",
	}
	raw := string(m.message(from, time.Date(2026, 3, 5, 9, 30, 0, 0, time.UTC)))
	head, body, ok := strings.Cut(raw, "\r\n\r\n")
	require.True(t, ok)
	require.NotContains(t, head, "\r\nBcc:", "a subject cannot add a header")
	parsed, err := mail.ReadMessage(strings.NewReader(raw))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(parsed.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Quote ready\r\nBcc: everyone@example.com", subject)
	require.Equal(t, "<abc@acme.example>", parsed.Header.Get("Message-ID"))
	require.Equal(t, "Thu, 05 Mar 2026 09:30:00 +0000", parsed.Header.Get("Date"))
	require.Equal(t, "L=C3=ADnea uno\r\nline two", body)
}
