package api

import (
	"mime"
	"net/http"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/labstack/echo/v4"
)

// help answers GET /brain/help: what the brain can do (its modes, the messages it understands by domain
// with examples, and every registry tool by domain). JSON by default, with the text under "help" as GEM
// has it; plain text with ?format=text, or when Accept prefers text/plain.
func (s *Server) help(c echo.Context) error {
	h := s.rules.Help()
	text := h.Text()
	switch format := c.QueryParam("format"); {
	case format == "text" || format == "" && prefersText(c.Request().Header.Get(echo.HeaderAccept)):
		return c.String(http.StatusOK, text)
	case format != "" && format != "json":
		return brain.Errorf(brain.EINVALID, "format must be json or text, not %q", format)
	}
	return ok(c, http.StatusOK, map[string]any{"help": text, "planner": s.runs.Planner().Name(), "modes": h.Modes, "domains": h.Domains})
}

// prefersText reports whether an Accept header lists text/plain before JSON (or any type).
func prefersText(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/plain":
			return true
		case "application/json", "*/*", "application/*":
			return false
		}
	}
	return false
}
