package api

import (
	"context"
	"crypto/subtle"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/gemhq/gem/registry"
	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// The studio is the operators' web console at /studio (docs/studio.md): server-rendered pages (html/template,
// which escapes everything it prints) and one small script that sends forms to this same JSON API, so a
// form gets exactly the API's checks and its validation messages. A login keeps a session in an HTTP-only,
// SameSite=Strict cookie; every form carries the session's CSRF token, which the API requires (in
// X-CSRF-Token) of any request authenticated by the cookie that may change something.

// Defaults of StudioConfig.
const (
	// StudioSessionTTLDefault is how long a studio login lasts.
	StudioSessionTTLDefault = 8 * time.Hour
)

// StudioConfig configures the studio.
type StudioConfig struct {
	// SessionTTL is how long a login lasts. Defaults to 8h (GEM_STUDIO_SESSION_TTL).
	SessionTTL time.Duration
	// InsecureCookie leaves the Secure flag off the session cookie, for a studio served over plain HTTP on a
	// host other than localhost (browsers drop Secure cookies there). Defaults to false
	// (GEM_STUDIO_INSECURE_COOKIE).
	InsecureCookie bool
}

const (
	studioPrefix = "/studio"
	// studioCookie holds the session id; studioLoginCookie the login form's CSRF token (before a session).
	studioCookie      = "gem_studio"
	studioLoginCookie = "gem_studio_login"
	// csrfHeader carries the CSRF token of a cookie-authenticated API request.
	csrfHeader = "X-CSRF-Token"
	csrfField  = "_csrf"
)

//go:embed studio
var studioFiles embed.FS

// studioSession is the request's studio login, when it came with one.
type studioSession struct {
	id   string
	csrf string
}

func studioSessionOf(c echo.Context) *studioSession {
	s, _ := c.Get("studio_session").(*studioSession)
	return s
}

// unsafeMethod reports whether a request may change something (RFC 9110, section 9.2.1).
func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// sameOrigin refuses a browser request from another site: its Origin (sent with every cross-origin and
// every POST request by today's browsers) must be this server's. Requests without Origin (curl, older
// browsers' same-origin GETs) pass; the CSRF token still guards them.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// cookiePrincipal authenticates a request by its studio cookie: the session's caller, as a bearer token
// of that caller would be. A request that may change something must also carry the session's CSRF token
// and come from this origin. found is false when the request has no studio cookie.
func (s *Server) cookiePrincipal(c echo.Context, csrf string) (p *principal, found bool, err error) {
	cookie, err := c.Cookie(studioCookie)
	if err != nil || cookie.Value == "" {
		return nil, false, nil
	}
	ctx := c.Request().Context()
	sess, err := postgres.StudioSessionGet(ctx, s.pool, cookie.Value)
	if brain.ErrorCode(err) == brain.ENOTFOUND {
		return nil, true, brain.Errorf(brain.EUNAUTHORIZED, "the studio session has ended: log in again at %s/login", studioPrefix)
	}
	if err != nil {
		return nil, true, err
	}
	if unsafeMethod(c.Request().Method) {
		if !sameOrigin(c.Request()) {
			return nil, true, brain.Errorf(brain.EFORBIDDEN, "a request from another site (Origin %q) may not use the studio's session", c.Request().Header.Get("Origin"))
		}
		if subtle.ConstantTimeCompare([]byte(csrf), []byte(sess.CSRFToken)) != 1 {
			return nil, true, brain.Errorf(brain.EFORBIDDEN, "missing or wrong CSRF token (send the studio page's token in %s)", csrfHeader)
		}
	}
	if p, err = s.principal(ctx, sess.Caller, "", ""); err != nil {
		return nil, true, err
	}
	c.Set("studio_session", &studioSession{id: cookie.Value, csrf: sess.CSRFToken})
	return p, true, nil
}

// studioAuth admits a studio page's request: with its login (or anyone when authentication is off), else
// it sends a browser to the login page.
func (s *Server) studioAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AuthDisabled {
			p, err := s.principal(c.Request().Context(), AnonymousCaller, "", "")
			if err != nil {
				return err
			}
			c.Set("principal", p)
			return next(c)
		}
		csrf := c.Request().Header.Get(csrfHeader)
		if csrf == "" && unsafeMethod(c.Request().Method) {
			csrf = c.FormValue(csrfField) // the studio's own plain forms (logout)
		}
		p, _, err := s.cookiePrincipal(c, csrf)
		switch code := brain.ErrorCode(err); {
		case err == nil && p == nil, code == brain.EUNAUTHORIZED:
			if c.Request().Method == http.MethodGet && !strings.HasSuffix(c.Path(), "/events") {
				s.setCookie(c, studioCookie, "", "/", time.Time{})
				return c.Redirect(http.StatusSeeOther, studioPrefix+"/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			if err == nil {
				err = brain.Errorf(brain.EUNAUTHORIZED, "log in to the studio first (%s/login)", studioPrefix)
			}
			return err
		case err != nil:
			return err
		}
		c.Set("principal", p)
		return next(c)
	}
}

// setCookie sets one of the studio's cookies (HttpOnly, SameSite=Strict, Secure unless InsecureCookie);
// an empty value removes it. The session cookie's path is / (the API's routes need it too); the login
// form's is /studio.
func (s *Server) setCookie(c echo.Context, name, value, path string, expires time.Time) {
	cookie := &http.Cookie{Name: name, Value: value, Path: path, Expires: expires, HttpOnly: true,
		Secure: !s.studio.InsecureCookie, SameSite: http.SameSiteStrictMode}
	if value == "" {
		cookie.Expires, cookie.MaxAge = time.Time{}, -1
	}
	c.SetCookie(cookie)
}

// newLoginToken sets a fresh login form token in its cookie and returns it (double submit).
func (s *Server) newLoginToken(c echo.Context) string {
	token := postgres.RandomToken()
	s.setCookie(c, studioLoginCookie, token, studioPrefix, time.Now().Add(time.Hour))
	return token
}

// safeNext keeps a post-login redirect inside the studio (never another site: "//evil" or "/\evil").
func safeNext(next string) string {
	if !strings.HasPrefix(next, studioPrefix+"/") || strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(next, "//") {
		return studioPrefix + "/calls"
	}
	return next
}

// studioLoginPage shows the login form, with a fresh CSRF token kept in its own cookie (double submit).
func (s *Server) studioLoginPage(c echo.Context) error {
	if s.cfg.AuthDisabled {
		return c.Redirect(http.StatusSeeOther, studioPrefix+"/calls")
	}
	return s.renderLogin(c, http.StatusOK, s.newLoginToken(c), c.QueryParam("next"), "")
}

func (s *Server) renderLogin(c echo.Context, status int, csrf, next, problem string) error {
	return s.render(c, status, "login.html", &studioPage{Title: "Log in", CSRF: csrf,
		Data: map[string]any{"Next": safeNext(next), "Error": problem}})
}

// studioLogin checks the bearer token typed in the login form and starts a session as its caller.
func (s *Server) studioLogin(c echo.Context) error {
	if s.cfg.AuthDisabled {
		return c.Redirect(http.StatusSeeOther, studioPrefix+"/calls")
	}
	next := c.FormValue("next")
	loginCookie, err := c.Cookie(studioLoginCookie)
	form := c.FormValue(csrfField)
	if err != nil || loginCookie.Value == "" || !sameOrigin(c.Request()) ||
		subtle.ConstantTimeCompare([]byte(form), []byte(loginCookie.Value)) != 1 {
		return s.renderLogin(c, http.StatusForbidden, s.newLoginToken(c), next, "The form expired or came from another site. Try again.")
	}
	token := strings.TrimSpace(c.FormValue("token"))
	var p *principal
	if token != "" {
		p, err = s.principal(c.Request().Context(), s.configuredName(token), token, c.Request().RemoteAddr)
	}
	if brain.ErrorCode(err) == brain.ETOOMANY {
		c.Response().Header().Set("Retry-After", throttledFor(err))
		tarpit(c.Request().Context(), err)
		return s.renderLogin(c, http.StatusTooManyRequests, loginCookie.Value, next,
			"Too many unknown tokens from your address: try again in "+throttledFor(err)+" s.")
	}
	if token == "" || brain.ErrorCode(err) == brain.EUNAUTHORIZED {
		problem := "That token is not valid."
		if token == "" {
			problem = "Enter a bearer token."
		} else if err != nil && strings.Contains(err.Error(), "revoked") {
			problem = "That token's caller is revoked."
		}
		return s.renderLogin(c, http.StatusUnauthorized, loginCookie.Value, next, problem)
	}
	if err != nil {
		return err
	}
	id, sess, err := postgres.StudioSessionCreate(c.Request().Context(), s.pool, p.name, s.studio.SessionTTL)
	if err != nil {
		return err
	}
	s.setCookie(c, studioCookie, id, "/", sess.ExpiresAt)
	s.setCookie(c, studioLoginCookie, "", studioPrefix, time.Time{})
	zerolog.Ctx(c.Request().Context()).Info().Str("caller", p.name).Msg("studio login")
	return c.Redirect(http.StatusSeeOther, safeNext(next))
}

// studioLogout ends the session (a form with the session's CSRF token, so another site cannot log a user
// out).
func (s *Server) studioLogout(c echo.Context) error {
	// studioAuth checked the form's CSRF token and origin.
	if sess := studioSessionOf(c); sess != nil {
		if err := postgres.StudioSessionDelete(c.Request().Context(), s.pool, sess.id); err != nil {
			return err
		}
	}
	s.setCookie(c, studioCookie, "", "/", time.Time{})
	return c.Redirect(http.StatusSeeOther, studioPrefix+"/login")
}

// studioPage is what every page's template gets.
type studioPage struct {
	Title string
	// Nav is the section the page belongs to (highlighted in the menu).
	Nav    string
	Caller string
	CSRF   string
	grants registry.Grants
	// AuthOff says authentication is off (no login, no logout).
	AuthOff bool
	Data    any
}

// Can reports whether the signed-in caller holds a permission (the page shows what it may do; the API
// decides).
func (p *studioPage) Can(permission string) bool { return p.grants.Allows(permission) }

var studioTemplates = parseStudioTemplates()

// parseStudioTemplates parses each page with the layout (each page defines "content").
func parseStudioTemplates() map[string]*template.Template {
	pages, err := fs.Glob(studioFiles, "studio/templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, page := range pages {
		name := strings.TrimPrefix(page, "studio/templates/")
		if name == "layout.html" || name == "partials.html" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(studioFuncs).ParseFS(studioFiles,
			"studio/templates/layout.html", "studio/templates/partials.html", page))
	}
	return out
}

// render writes a page: the layout around the page's content.
func (s *Server) render(c echo.Context, status int, name string, page *studioPage) error {
	t, ok := studioTemplates[name]
	if !ok {
		return fmt.Errorf("no studio template %s", name)
	}
	if p := principalOf(c); p != nil {
		page.Caller, page.grants = p.name, p.grants
	}
	if sess := studioSessionOf(c); sess != nil {
		page.CSRF = sess.csrf
	}
	page.AuthOff = s.cfg.AuthDisabled
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, "layout.html", page); err != nil {
		return fmt.Errorf("error rendering %s: %w", name, err)
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	return c.HTML(status, buf.String())
}

// studioStatic serves the embedded stylesheet and script.
func studioStatic() echo.HandlerFunc {
	sub, err := fs.Sub(studioFiles, "studio/static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix(studioPrefix+"/static/", http.FileServer(http.FS(sub)))
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=300")
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// studioError shows an error as a page to a browser navigating the studio (the API answers JSON).
func (s *Server) studioError(c echo.Context, e *brain.Error) {
	page := &studioPage{Title: "Error", Data: e}
	if err := s.render(c, HTTPStatus(e.Code), "error.html", page); err != nil {
		_ = c.JSON(HTTPStatus(e.Code), errorBody{Errors: []*brain.Error{e}})
	}
}

// isStudioPage says whether a request is a browser's navigation of a studio page (not its event stream
// or River UI's API).
func isStudioPage(c echo.Context) bool {
	p := c.Request().URL.Path
	return strings.HasPrefix(p, studioPrefix+"/") && !strings.HasPrefix(p, studioPrefix+"/river") &&
		!strings.HasSuffix(p, "/events") && c.Request().Method == http.MethodGet
}

// studioCtx bounds a page's database reads.
func studioCtx(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), 10*time.Second)
}
