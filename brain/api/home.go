package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// home answers GET /: a browser that opens the brain's address lands in the studio.
func (s *Server) home(c echo.Context) error {
	return c.Redirect(http.StatusSeeOther, studioPrefix)
}

// faviconPath is the studio's icon, which its pages link to; browsers ask for /favicon.ico by themselves
// on every other page (a JSON answer, this description), and get the same icon.
const faviconPath = "studio/static/favicon.svg"

// serveFavicon answers GET /favicon.ico with the studio's icon.
func serveFavicon(c echo.Context) error {
	icon, err := studioFiles.ReadFile(faviconPath)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=86400")
	return c.Blob(http.StatusOK, "image/svg+xml", icon)
}
