package executor_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/executor/business"
	"github.com/gemhq/gem/executor/business/twiliotest"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

func TestBusinessSendNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil) // b.business is empty: no providers

	tests := []struct {
		tool  string
		input J
		env   []string
	}{
		{"comms.send_sms", J{"to": "0412 345 678", "body": "Your quote is ready"},
			[]string{"GEM_SMS_TWILIO_ACCOUNT_SID", "GEM_SMS_TWILIO_AUTH_TOKEN", "GEM_SMS_FROM"}},
		{"comms.send_email", J{"to": "maria@example.com", "subject": "Your quote", "body": "Attached."},
			[]string{"GEM_SMTP_URL", "GEM_EMAIL_FROM"}},
	}
	for _, tt := range tests {
		r := b.run(t, ctx, tt.tool, tt.input)
		require.Equal(t, registry.StatusNotConfigured, r.Status, tt.tool)
		require.Equal(t, registry.CodeNotConfigured, r.Error.Code, tt.tool)
		var d registry.NotConfiguredDetails
		require.NoError(t, json.Unmarshal(r.Error.Details, &d))
		require.Equal(t, tt.env, d.RequiredEnv, tt.tool)
		require.NotEmpty(t, d.Reason)
		steps := strings.Join(d.NextSteps, " ")
		for _, env := range tt.env {
			require.Contains(t, steps, env, "%s: the next steps name every variable to set", tt.tool)
		}
		require.Empty(t, r.Effects.Outside, tt.tool)
		require.Empty(t, r.Effects.DBWrites, tt.tool)
	}
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestBusinessCallsAndFollowups(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	lead := b.newLead(t, ctx)
	r, rc := b.ok(t, ctx, "comms.log_call_outcome", J{"lead_id": lead, "outcome": "no_answer"})
	require.Equal(t, "new", r.str(t, "lead_stage"), "not reached: still new")
	require.Equal(t, "call", r.str(t, "comm.channel"))
	require.NotEmpty(t, r.str(t, "comm.counterpart"), "the lead's number")
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(rc))

	r, rc = b.ok(t, ctx, "comms.log_call_outcome", J{"lead_id": lead, "outcome": "callback_requested", "notes": "after 5pm", "duration_seconds": 95})
	require.Equal(t, "contacted", r.str(t, "lead_stage"))
	require.Equal(t, map[string]int{"comms_log insert": 1, "leads update": 1}, writes(rc))

	r, _ = b.ok(t, ctx, "comms.log_call_outcome", J{"phone": "0400 555 666", "direction": "inbound", "outcome": "answered"})
	require.Nil(t, r.get(t, "lead_stage"))
	require.Equal(t, "0400 555 666", r.str(t, "comm.counterpart"))
	b.refused(t, ctx, registry.CodeValidation, "comms.log_call_outcome", J{"outcome": "answered"})

	due := rfc3339(time.Now().Add(26 * time.Hour))
	r, rc = b.ok(t, ctx, "comms.create_followup_task", J{"lead_id": lead, "due_at": due, "priority": "high"})
	require.Contains(t, r.str(t, "task.title"), "Follow up with Fixture Lead")
	require.Equal(t, lead, r.str(t, "task.lead_id"))
	require.Equal(t, "high", r.str(t, "task.priority"))
	require.Equal(t, []string{r.str(t, "task.task_id")}, wroteIDs(rc, "os_tasks", "insert"))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE lead_id = $1 AND status = 'open'`, lead))
}

func TestBusinessSendSMSThroughTwilio(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	b.business = business.Config{SMS: business.TwilioConfig{
		AccountSID: twilio.AccountSID, AuthToken: twilio.AuthToken, From: "+61400999888", BaseURL: twilio.URL,
	}}
	b.startExecutor(t, nil)

	lead, _ := b.ok(t, ctx, "leads.create", J{"name": "Ann Lee", "phone": "0412 345 678"})
	leadID := lead.str(t, "lead.lead_id")

	id := b.call(t, ctx, "comms.send_sms", `{"lead_id": "`+leadID+`", "body": "Hi Ann, your roof quote is on its way. – Acme Roofing"}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	res := decodeResult(t, r)
	sid := res.str(t, "comm.provider_ref")
	require.True(t, strings.HasPrefix(sid, "SM"), sid)
	require.Equal(t, "+61412345678", res.str(t, "comm.counterpart"), "the lead's local number, in E.164")
	require.Equal(t, "twilio", res.str(t, "comm.provider"))
	require.Equal(t, "queued", res.str(t, "provider_status"))
	require.Equal(t, int64(1), res.int(t, "segments"))
	require.Equal(t, leadID, res.str(t, "comm.lead_id"))

	require.Equal(t, []registry.OutsideEffect{{Kind: "sms", Target: "+61412345678", Reference: sid}}, r.Effects.Outside)
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(r))
	require.NotNil(t, r.Summary["effects.outside"])

	got := twilio.Messages()
	require.Len(t, got, 1)
	require.Equal(t, "+61412345678", got[0].Get("To"))
	require.Equal(t, "+61400999888", got[0].Get("From"))
	require.Equal(t, "Hi Ann, your roof quote is on its way. – Acme Roofing", got[0].Get("Body"))

	// Outside effects: the executor committed a marker before the handler ran, so the call never runs twice.
	var marked bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT outside_token IS NOT NULL FROM core_tool_calls WHERE id = $1`, id).Scan(&marked))
	require.True(t, marked)
	require.Equal(t, sid, b.str(t, ctx, `SELECT provider_ref FROM comms_log WHERE channel = 'sms'`))

	// A number Twilio refuses: validation_error with Twilio's code, nothing logged, nothing sent.
	refused := b.run(t, ctx, "comms.send_sms", J{"to": "+61 400 000 000", "body": "hello"})
	require.Equal(t, registry.StatusFailed, refused.Status)
	require.Equal(t, registry.CodeValidation, refused.Error.Code)
	require.Contains(t, refused.Error.Message, "not a valid phone number")
	require.Equal(t, float64(21211), decodeDetails(t, refused)["code"])
	require.Empty(t, refused.Effects.Outside)
	require.Empty(t, refused.Effects.DBWrites)
	require.Len(t, twilio.Messages(), 1)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestBusinessSendSMSBadCredentials(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	twilio := twiliotest.New()
	t.Cleanup(twilio.Close)
	b.business = business.Config{SMS: business.TwilioConfig{
		AccountSID: twilio.AccountSID, AuthToken: "wrong", From: "+61400999888", BaseURL: twilio.URL,
	}}
	b.startExecutor(t, nil)

	r := b.run(t, ctx, "comms.send_sms", J{"to": "0412 345 678", "body": "hello"})
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.Reason, "HTTP 401, code 20003")
	require.Contains(t, strings.Join(d.NextSteps, " "), "GEM_SMS_TWILIO_AUTH_TOKEN")
	require.Empty(t, twilio.Messages())
}

// fakeSMTP is an SMTP server that speaks enough of RFC 5321 for a real client: EHLO (offering AUTH PLAIN
// and 8BITMIME, not STARTTLS), AUTH PLAIN, MAIL, RCPT, DATA, RSET, NOOP, QUIT. It requires the login it was
// made with and refuses the recipient nobody@invalid.example.
type fakeSMTP struct {
	addr       string
	user, pass string

	mu    sync.Mutex
	mails []fakeMail
}

type fakeMail struct {
	login string
	from  string
	to    []string
	data  string
}

func newFakeSMTP(t *testing.T, user, pass string) *fakeSMTP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	f := &fakeSMTP{addr: ln.Addr().String(), user: user, pass: pass}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(conn)
		}
	}()
	return f
}

func (f *fakeSMTP) serve(conn net.Conn) {
	defer conn.Close()
	tp := textproto.NewConn(conn)
	reply := func(lines ...string) {
		for _, l := range lines {
			_ = tp.PrintfLine("%s", l)
		}
	}
	reply("220 fake.example ESMTP ready")
	var m fakeMail
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			reply("250-fake.example greets "+arg, "250-8BITMIME", "250-AUTH PLAIN", "250 SIZE 10240000")
		case "HELO", "NOOP":
			reply("250 2.0.0 Ok")
		case "AUTH":
			mech, initial, _ := strings.Cut(arg, " ")
			raw, err := base64.StdEncoding.DecodeString(initial)
			parts := strings.Split(string(raw), "\x00")
			if strings.ToUpper(mech) != "PLAIN" || err != nil || len(parts) != 3 || parts[1] != f.user || parts[2] != f.pass {
				reply("535 5.7.8 Error: authentication failed")
				continue
			}
			m.login = parts[1]
			reply("235 2.7.0 Authentication successful")
		case "MAIL":
			if m.login == "" {
				reply("530 5.7.0 Authentication required")
				continue
			}
			m.from = between(arg, "<", ">")
			reply("250 2.1.0 Ok")
		case "RCPT":
			to := between(arg, "<", ">")
			if to == "nobody@invalid.example" {
				reply("550 5.1.1 <" + to + ">: Recipient address rejected: User unknown")
				continue
			}
			m.to = append(m.to, to)
			reply("250 2.1.5 Ok")
		case "DATA":
			reply("354 End data with <CR><LF>.<CR><LF>")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			m.data = string(data)
			f.mu.Lock()
			f.mails = append(f.mails, m)
			f.mu.Unlock()
			m = fakeMail{login: m.login}
			reply("250 2.0.0 Ok: queued as 4Xq1Bk")
		case "RSET":
			m = fakeMail{login: m.login}
			reply("250 2.0.0 Ok")
		case "QUIT":
			reply("221 2.0.0 Bye")
			return
		default:
			reply("502 5.5.2 Error: command not recognized")
		}
	}
}

func (f *fakeSMTP) received() []fakeMail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeMail(nil), f.mails...)
}

func between(s, open, close string) string {
	_, rest, _ := strings.Cut(s, open)
	v, _, _ := strings.Cut(rest, close)
	return v
}

func TestBusinessSendEmailThroughSMTP(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	smtp := newFakeSMTP(t, "gem", "s3cret p@ss")
	b.business = business.Config{Email: business.SMTPConfig{
		URL:  "smtp://gem:s3cret%20p%40ss@" + smtp.addr, // the password, percent-encoded
		From: "Acme Roofing <office@acme-roofing.example>",
	}}
	b.startExecutor(t, nil)

	lead, _ := b.ok(t, ctx, "leads.create", J{"name": "Maria Rossi", "phone": newPhone(), "email": "maria@example.com"})
	leadID := lead.str(t, "lead.lead_id")

	id := b.call(t, ctx, "comms.send_email", `{"lead_id": "`+leadID+`", "subject": "Your roof quote – Q-0001",
		"body": "Grazie Maria,\nyour quote is $10,298.70 inc. GST.\n.\nAcme Roofing", "reply_to": "sam@acme-roofing.example"}`)
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	res := decodeResult(t, r)
	messageID := res.str(t, "comm.provider_ref")
	require.Regexp(t, `^<[0-9a-f-]{36}@acme-roofing\.example>$`, messageID)
	require.Equal(t, "maria@example.com", res.str(t, "comm.counterpart"), "the lead's address")
	require.Equal(t, "smtp", res.str(t, "comm.provider"))
	require.Equal(t, []registry.OutsideEffect{{Kind: "email", Target: "maria@example.com", Reference: messageID}}, r.Effects.Outside)
	require.Equal(t, map[string]int{"comms_log insert": 1}, writes(r))

	mails := smtp.received()
	require.Len(t, mails, 1)
	require.Equal(t, "gem", mails[0].login)
	require.Equal(t, "office@acme-roofing.example", mails[0].from)
	require.Equal(t, []string{"maria@example.com"}, mails[0].to)

	msg, err := mail.ReadMessage(strings.NewReader(mails[0].data))
	require.NoError(t, err)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Your roof quote – Q-0001", subject)
	require.Equal(t, messageID, msg.Header.Get("Message-ID"))
	require.Equal(t, `"Acme Roofing" <office@acme-roofing.example>`, msg.Header.Get("From"))
	require.Equal(t, "<sam@acme-roofing.example>", msg.Header.Get("Reply-To"))
	require.Equal(t, "quoted-printable", msg.Header.Get("Content-Transfer-Encoding"))
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	require.NoError(t, err)
	// ReadDotBytes hands lines over with LF ends; the last line was ended for the DATA terminator.
	require.Equal(t, "Grazie Maria,\nyour quote is $10,298.70 inc. GST.\n.\nAcme Roofing\n", string(body),
		"the lone dot survives SMTP's dot-stuffing")

	// A recipient the server refuses: validation_error, nothing logged, nothing sent.
	refused := b.run(t, ctx, "comms.send_email", J{"to": "nobody@invalid.example", "subject": "x", "body": "y"})
	require.Equal(t, registry.StatusFailed, refused.Status)
	require.Equal(t, registry.CodeValidation, refused.Error.Code)
	require.Contains(t, refused.Error.Message, "550")
	require.Empty(t, refused.Effects.Outside)
	require.Empty(t, refused.Effects.DBWrites)
	require.Len(t, smtp.received(), 1)
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM comms_log`))
}

func TestBusinessSendEmailBadLogin(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	smtp := newFakeSMTP(t, "gem", "right")
	b.business = business.Config{Email: business.SMTPConfig{URL: "smtp://gem:wrong@" + smtp.addr, From: "office@acme-roofing.example"}}
	b.startExecutor(t, nil)

	r := b.run(t, ctx, "comms.send_email", J{"to": "maria@example.com", "subject": "x", "body": "y"})
	require.Equal(t, registry.StatusNotConfigured, r.Status)
	var d registry.NotConfiguredDetails
	require.NoError(t, json.Unmarshal(r.Error.Details, &d))
	require.Contains(t, d.Reason, "535")
	require.Equal(t, []string{"GEM_SMTP_URL", "GEM_EMAIL_FROM"}, d.RequiredEnv)
	require.Empty(t, smtp.received())
}
