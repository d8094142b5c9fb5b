package businesshandlers

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/gemhq/gem/registry"
)

// smtpServer is a parsed businesspack.SMTPConfig: the server and the sender.
type smtpServer struct {
	businesspack.SMTPServer
	from *mail.Address
}

func parseSMTP(c businesspack.SMTPConfig) (*smtpServer, error) {
	server, err := businesspack.ParseSMTPURL(c.URL)
	if err != nil {
		return nil, err
	}
	s := &smtpServer{SMTPServer: server}
	if s.from, err = businesspack.ParseEmailFrom(c.From); err != nil {
		return nil, err
	}
	return s, nil
}

// outgoingEmail is one plain-text email.
type outgoingEmail struct {
	// messageID is the Message-ID, without angle brackets.
	messageID string
	to        *mail.Address
	replyTo   *mail.Address
	subject   string
	body      string
}

// message renders the email as RFC 5322 text: UTF-8, quoted-printable, CRLF line ends.
func (m outgoingEmail) message(from *mail.Address, now time.Time) []byte {
	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	header("From", from.String())
	header("To", m.to.String())
	if m.replyTo != nil {
		header("Reply-To", m.replyTo.String())
	}
	// Q-encoding also encodes CR and LF, so a subject cannot add headers.
	header("Subject", mime.QEncoding.Encode("utf-8", m.subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+m.messageID+">")
	header("MIME-Version", "1.0")
	header("Content-Type", `text/plain; charset="utf-8"`)
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(m.body)) // writes to a bytes.Buffer cannot fail
	_ = qp.Close()
	return b.Bytes()
}

// sendSMTP delivers one email to the server: EHLO, STARTTLS when offered (or TLS from the start for
// smtps), AUTH PLAIN when the URL has credentials, MAIL, RCPT, DATA. The call's deadline bounds the whole
// conversation.
func sendSMTP(ctx context.Context, srv *smtpServer, m outgoingEmail) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", srv.Addr)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return smtpFailure(fmt.Sprintf("error connecting to the SMTP server %s: %v; the email was not sent", srv.Addr, err))
	}
	defer conn.Close()
	// A cancelled call interrupts the conversation wherever it is.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if srv.ImplicitTLS {
		tlsConn := tls.Client(conn, &tls.Config{ServerName: srv.Host})
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			return smtpFailure(fmt.Sprintf("error in the TLS handshake with %s: %v; the email was not sent", srv.Addr, err))
		}
		conn = tlsConn
	}

	notSent := func(step string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var te *textproto.Error
		if errors.As(err, &te) && te.Code/100 == 4 {
			return smtpFailure(fmt.Sprintf("the SMTP server refused %s for now (%d %s); the email was not sent, try again later", step, te.Code, te.Msg))
		}
		return smtpFailure(fmt.Sprintf("error at %s with the SMTP server: %v; the email was not sent", step, err))
	}
	c, err := smtp.NewClient(conn, srv.Host)
	if err != nil {
		return notSent("the greeting", err)
	}
	defer c.Close()
	hello, _ := os.Hostname()
	if hello == "" {
		hello = "localhost"
	}
	if err := c.Hello(hello); err != nil {
		return notSent("EHLO", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !srv.ImplicitTLS {
		if err := c.StartTLS(&tls.Config{ServerName: srv.Host}); err != nil {
			return notSent("STARTTLS", err)
		}
	}
	if srv.User != nil {
		password, _ := srv.User.Password()
		// PlainAuth refuses to send credentials unencrypted, except to localhost.
		if err := c.Auth(smtp.PlainAuth("", srv.User.Username(), password, srv.Host)); err != nil {
			var te *textproto.Error
			if ctx.Err() == nil && (!errors.As(err, &te) || te.Code/100 == 5) {
				return executor.NotConfigured(fmt.Sprintf("the SMTP server did not accept the login in %s: %v", businesspack.EnvSMTPURL, err), businesspack.EmailRequiredEnv,
					"Check the user and password in "+businesspack.EnvSMTPURL+" (smtp://user:password@host:587; percent-encode special characters).",
					"Use a server that offers STARTTLS, or smtps:// for TLS from the start: credentials are never sent unencrypted.")
			}
			return notSent("AUTH", err)
		}
	}
	if err := c.Mail(srv.from.Address); err != nil {
		return notSent("MAIL FROM", err)
	}
	if err := c.Rcpt(m.to.Address); err != nil {
		var te *textproto.Error
		if errors.As(err, &te) && te.Code/100 == 5 {
			return &executor.Error{Code: registry.CodeValidation, Details: map[string]any{"provider": "smtp", "smtp_code": te.Code},
				Message: fmt.Sprintf("the SMTP server refused the recipient %s (%d %s); the email was not sent", m.to.Address, te.Code, te.Msg)}
		}
		return notSent("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return notSent("DATA", err)
	}
	if _, err := w.Write(m.message(srv.from, time.Now())); err != nil {
		_ = w.Close()
		return notSent("sending the message", err)
	}
	if err := w.Close(); err != nil {
		var te *textproto.Error
		if errors.As(err, &te) {
			return smtpFailure(fmt.Sprintf("the SMTP server refused the message (%d %s); the email was not sent", te.Code, te.Msg))
		}
		return smtpFailure(fmt.Sprintf("error finishing the message: %v; the server may have accepted it, so check before sending again", err))
	}
	_ = c.Quit() // the server has accepted the message: a failed QUIT changes nothing
	return nil
}

func smtpFailure(message string) error {
	return &executor.Error{Code: registry.CodeHandlerError, Message: message, Details: map[string]any{"provider": "smtp"}}
}

// messageIDDomain is the domain part of the sender's address, for Message-IDs.
func messageIDDomain(from *mail.Address) string {
	if _, domain, ok := strings.Cut(from.Address, "@"); ok && domain != "" {
		return domain
	}
	return "gem.invalid"
}
