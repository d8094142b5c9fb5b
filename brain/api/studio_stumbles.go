package api

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/postgres"
	"github.com/labstack/echo/v4"
)

// stumbleWindow is a window the stumbles page offers: the attempts of its last Span.
type stumbleWindow struct {
	Name string
	Span time.Duration
}

// stumbleWindows are the windows the stumbles page offers, the first its default.
var stumbleWindows = []stumbleWindow{{"7d", 7 * 24 * time.Hour}, {"24h", 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// studioStumbles shows where agents stumble (docs/evals.md#where-agents-stumble-from-production): tools and
// agents ranked by the share of their attempts refused or failed for a reason a better description or
// schema would avoid, each reason with its count and example runs. A caller reads the runs it may read, as
// on the runs page.
func (s *Server) studioStumbles(c echo.Context) error {
	ctx, cancel := studioCtx(c)
	defer cancel()
	window := c.QueryParam("since")
	if window == "" {
		window = stumbleWindows[0].Name
	}
	i := slices.IndexFunc(stumbleWindows, func(w stumbleWindow) bool { return w.Name == window })
	if i < 0 {
		names := make([]string, len(stumbleWindows))
		for j, w := range stumbleWindows {
			names[j] = w.Name
		}
		return &brain.Error{Code: brain.EINVALID, Message: "since must be one of " + strings.Join(names, ", "), Details: map[string]any{"field": "since"}}
	}
	now := time.Now()
	list, err := postgres.ToolStumbles(ctx, s.pool, now.Add(-stumbleWindows[i].Span), now, principalOf(c).reader())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "stumbles.html", &studioPage{Title: "Where agents stumble", Nav: "stumbles",
		Data: map[string]any{"Stumbles": list, "Since": window, "Windows": stumbleWindows}})
}
