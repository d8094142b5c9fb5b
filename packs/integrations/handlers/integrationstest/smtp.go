package integrationstest

import (
	"bufio"
	"encoding/base64"
	"net"
	"net/url"
	"strings"
	"sync"

	businesspack "github.com/gemhq/gem/packs/business"
)

// SMTP is an SMTP server on a loopback port speaking enough of RFC 5321 and RFC 4954 for a health check:
// a 220 greeting, EHLO (offering AUTH PLAIN), AUTH PLAIN checked against User and Password, NOOP, RSET
// and QUIT. It offers no STARTTLS; Go's client sends credentials unencrypted to localhost only.
type SMTP struct {
	Addr, User, Password string

	ln       net.Listener
	mu       sync.Mutex
	commands []string
	greeting string
	wg       sync.WaitGroup
}

// NewSMTP starts a server with fresh credentials.
func NewSMTP() (*SMTP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &SMTP{Addr: ln.Addr().String(), User: "gem", Password: randomID(8), ln: ln, greeting: "220 localhost ESMTP fake"}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Config is the business pack's email configuration for this server.
func (s *SMTP) Config() businesspack.SMTPConfig {
	u := url.URL{Scheme: "smtp", User: url.UserPassword(s.User, s.Password), Host: s.Addr}
	return businesspack.SMTPConfig{URL: u.String(), From: "GEM <office@example.com>"}
}

// Busy makes the server greet with 421 (service not available, try later).
func (s *SMTP) Busy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.greeting = "421 localhost busy, try again later"
}

// Commands returns the command verbs received, in order (AUTH without its credentials).
func (s *SMTP) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commands...)
}

// Close stops the server.
func (s *SMTP) Close() {
	_ = s.ln.Close()
	s.wg.Wait()
}

func (s *SMTP) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(conn)
		}()
	}
}

func (s *SMTP) serve(conn net.Conn) {
	defer conn.Close()
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	reply := func(lines ...string) bool {
		for _, l := range lines {
			_, _ = w.WriteString(l + "\r\n")
		}
		return w.Flush() == nil
	}
	s.mu.Lock()
	greeting := s.greeting
	s.mu.Unlock()
	if !reply(greeting) || strings.HasPrefix(greeting, "421") {
		return
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb, arg, _ := strings.Cut(line, " ")
		verb = strings.ToUpper(verb)
		s.mu.Lock()
		s.commands = append(s.commands, verb)
		s.mu.Unlock()
		switch verb {
		case "EHLO":
			reply("250-localhost greets "+arg, "250-8BITMIME", "250-AUTH PLAIN", "250 SIZE 10240000")
		case "HELO":
			reply("250 localhost")
		case "AUTH":
			mech, initial, _ := strings.Cut(arg, " ")
			if !strings.EqualFold(mech, "PLAIN") {
				reply("504 5.5.4 unrecognised authentication type")
				continue
			}
			creds, err := base64.StdEncoding.DecodeString(initial)
			parts := strings.Split(string(creds), "\x00")
			if err != nil || len(parts) != 3 || parts[1] != s.User || parts[2] != s.Password {
				reply("535 5.7.8 authentication credentials invalid")
				continue
			}
			reply("235 2.7.0 authentication successful")
		case "NOOP", "RSET":
			reply("250 2.0.0 OK")
		case "QUIT":
			reply("221 2.0.0 bye")
			return
		default:
			reply("502 5.5.2 command not implemented")
		}
	}
}
