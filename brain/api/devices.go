package api

import (
	"errors"
	"net/http"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/labstack/echo/v4"
)

// DeviceConnectPath is where devices open their WebSocket (with a device token, not an API token).
const DeviceConnectPath = "/devices/connect"

var deviceSchema = mustRequestSchema("DeviceRequest", "device", `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,62}$", "not": {"const": "connect"}},
		"owner": {"type": "string", "maxLength": 200},
		"permissions": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 200}
	},
	"required": ["name"],
	"additionalProperties": false
}`)

var deviceGrantSchema = mustRequestSchema("DeviceGrantRequest", "device-grant", `{
	"type": "object",
	"properties": {"permissions": {"type": "array", "items": {"type": "string", "maxLength": 100}, "maxItems": 200}},
	"required": ["permissions"],
	"additionalProperties": false
}`)

type deviceParams struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Permissions bound the tools the device may serve; absent: any ("*").
	Permissions []string `json:"permissions"`
}

func (s *Server) listDevices(c echo.Context) error {
	list, err := gemsql.DeviceList(c.Request().Context(), s.pool)
	if err != nil {
		return err
	}
	return ok(c, http.StatusOK, map[string]any{"devices": list})
}

func (s *Server) getDevice(c echo.Context) error {
	d, err := gemsql.DeviceGet(c.Request().Context(), s.pool, c.Param("name"))
	if err != nil {
		return deviceError(c.Param("name"), err)
	}
	return ok(c, http.StatusOK, map[string]any{"device": d})
}

// createDevice makes a device and answers its token, shown this once.
func (s *Server) createDevice(c echo.Context) error {
	p, _, err := decodeBody[deviceParams](c, deviceSchema, "")
	if err != nil {
		return err
	}
	if err := registry.CheckGrants(p.Permissions); err != nil {
		return &brain.Error{Code: brain.EINVALID, Message: "permissions: " + err.Error(), Details: map[string]any{"field": "permissions"}}
	}
	ctx := c.Request().Context()
	token, err := gemsql.DeviceCreate(ctx, s.pool, p.Name, p.Owner, p.Permissions)
	if err != nil {
		return deviceError(p.Name, err)
	}
	d, err := gemsql.DeviceGet(ctx, s.pool, p.Name)
	if err != nil {
		return err
	}
	return ok(c, http.StatusCreated, map[string]any{"device": d, "token": token,
		"note": "the token is shown only now: give it to the device (GEM_DEVICE_TOKEN)"})
}

// grantDevice replaces the permissions a device's tools may declare, from its next registration.
func (s *Server) grantDevice(c echo.Context) error {
	p, _, err := decodeBody[deviceParams](c, deviceGrantSchema, "")
	if err != nil {
		return err
	}
	if err := registry.CheckGrants(p.Permissions); err != nil {
		return &brain.Error{Code: brain.EINVALID, Message: "permissions: " + err.Error(), Details: map[string]any{"field": "permissions"}}
	}
	ctx := c.Request().Context()
	if err := gemsql.DeviceGrant(ctx, s.pool, c.Param("name"), p.Permissions); err != nil {
		return deviceError(c.Param("name"), err)
	}
	d, err := gemsql.DeviceGet(ctx, s.pool, c.Param("name"))
	if err != nil {
		return deviceError(c.Param("name"), err)
	}
	return ok(c, http.StatusOK, map[string]any{"device": d, "note": "the permissions apply from the device's next registration"})
}

func (s *Server) rotateDeviceToken(c echo.Context) error {
	token, err := gemsql.DeviceRotateToken(c.Request().Context(), s.pool, c.Param("name"))
	if err != nil {
		return deviceError(c.Param("name"), err)
	}
	return ok(c, http.StatusOK, map[string]any{"device": c.Param("name"), "token": token,
		"note": "the old token no longer connects; the token is shown only now"})
}

func (s *Server) deleteDevice(c echo.Context) error {
	if err := gemsql.DeviceDelete(c.Request().Context(), s.pool, c.Param("name")); err != nil {
		return deviceError(c.Param("name"), err)
	}
	return ok(c, http.StatusOK, map[string]any{"deleted": c.Param("name")})
}

func deviceError(name string, err error) error {
	switch {
	case errors.Is(err, gemsql.ErrNotFound):
		return brain.Errorf(brain.ENOTFOUND, "no device named %q", name)
	case errors.Is(err, gemsql.ErrExists):
		return brain.Errorf(brain.ECONFLICT, "a device named %q already exists", name)
	}
	return err
}
