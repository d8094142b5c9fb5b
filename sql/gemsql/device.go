package gemsql

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The channels of the device relay (docs/devices.md). The hub listens on DeviceDispatchChannel (payload: the
// device with attempts to send or cancel); executors on DeviceResultChannel (payload: the call whose attempt
// changed); both on DeviceChangedChannel (payload: a device that registered, went away or was
// deleted).
const (
	DeviceDispatchChannel = "gem_device_dispatch"
	DeviceResultChannel   = "gem_device_result"
	DeviceChangedChannel  = "gem_device_changed"
)

// Device attempt states (core_device_attempts.state).
const (
	AttemptQueued    = "queued"
	AttemptSent      = "sent"
	AttemptSucceeded = "succeeded"
	AttemptFailed    = "failed"
	AttemptUnsent    = "unsent"
	AttemptLost      = "lost"
	AttemptAbandoned = "abandoned"
)

// DeviceNameRe is the rule for device names: a slug, as agents' are.
var DeviceNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// ErrExists is returned when something to create already exists (errors.Is matches it; its code is
// ECONFLICT).
var ErrExists error = &Error{Code: ECONFLICT, Message: "already exists"}

// Device is a row of core_devices_status: a device, whether it can be given calls, and its tools.
type Device struct {
	Name           string     `json:"name"`
	Owner          string     `json:"owner"`
	Alive          bool       `json:"alive"`
	Connected      bool       `json:"connected"`
	Hub            string     `json:"hub,omitempty"`
	ConnectedAt    *time.Time `json:"connected_at,omitempty"`
	DisconnectedAt *time.Time `json:"disconnected_at,omitempty"`
	LastHeartbeat  *time.Time `json:"last_heartbeat,omitempty"`
	Tools          []string   `json:"tools"`
	OpenAttempts   int64      `json:"open_attempts"`
	// Permissions bound the tools the device may serve (docs/governance.md#devices).
	Permissions []string `json:"permissions"`
}

const deviceColumns = `name, owner, alive, connected, coalesce(hub, ''), connected_at, disconnected_at, last_heartbeat,
	tools, open_attempts, permissions`

func scanDevice(row pgx.Row) (*Device, error) {
	var d Device
	err := row.Scan(&d.Name, &d.Owner, &d.Alive, &d.Connected, &d.Hub, &d.ConnectedAt, &d.DisconnectedAt,
		&d.LastHeartbeat, &d.Tools, &d.OpenAttempts, &d.Permissions)
	return &d, err
}

// DeviceList returns every device, by name.
func DeviceList(ctx context.Context, db DBTX) ([]*Device, error) {
	rows, err := db.Query(ctx, `SELECT `+deviceColumns+` FROM core_devices_status ORDER BY name`)
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing devices: %w", err))
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Device, error) { return scanDevice(row) })
	if err != nil {
		return nil, Coded(fmt.Errorf("error listing devices: %w", err))
	}
	return list, nil
}

// DeviceGet returns one device, or ErrNotFound.
func DeviceGet(ctx context.Context, db DBTX, name string) (*Device, error) {
	d, err := scanDevice(db.QueryRow(ctx, `SELECT `+deviceColumns+` FROM core_devices_status WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, Coded(fmt.Errorf("error reading device %s: %w", name, err))
	}
	return d, nil
}

// DeviceCreate makes a device that may serve tools needing permissions (nil: any, "*") and returns its
// token, which is stored only as its SHA-256: it cannot be shown again. A device that exists is ErrExists.
func DeviceCreate(ctx context.Context, db DBTX, name, owner string, permissions []string) (token string, err error) {
	token = newToken("gemdev_")
	if permissions == nil {
		permissions = []string{"*"}
	}
	_, err = db.Exec(ctx, `INSERT INTO core_devices (name, owner, token_hash, permissions) VALUES ($1, $2, $3, $4)`,
		name, owner, TokenHash(token), permissions)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return "", ErrExists
	}
	if err != nil {
		return "", Coded(fmt.Errorf("error creating device %s: %w", name, err))
	}
	return token, nil
}

// DeviceGrant replaces the permissions a device's tools may declare; it applies from the device's next
// registration. A device that does not exist is ErrNotFound.
func DeviceGrant(ctx context.Context, db DBTX, name string, permissions []string) error {
	tag, err := db.Exec(ctx, `UPDATE core_devices SET permissions = $2 WHERE name = $1`, name, nonNil(permissions))
	if err != nil {
		return Coded(fmt.Errorf("error granting device %s: %w", name, err))
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DeviceRotateToken gives a device a new token; the old one stops working (a connected device keeps its
// socket until it reconnects). A device that does not exist is ErrNotFound.
func DeviceRotateToken(ctx context.Context, db DBTX, name string) (string, error) {
	token := newToken("gemdev_")
	tag, err := db.Exec(ctx, `UPDATE core_devices SET token_hash = $2 WHERE name = $1`, name, TokenHash(token))
	if err != nil {
		return "", Coded(fmt.Errorf("error rotating the token of device %s: %w", name, err))
	}
	if tag.RowsAffected() == 0 {
		return "", ErrNotFound
	}
	return token, nil
}

// DeviceDelete removes a device and its tools; its open attempts end as if it had gone away. A device that
// does not exist is ErrNotFound.
func DeviceDelete(ctx context.Context, db DBTX, name string) error {
	var found bool
	if err := db.QueryRow(ctx, `SELECT gem_device_delete($1)`, name).Scan(&found); err != nil {
		return Coded(fmt.Errorf("error deleting device %s: %w", name, err))
	}
	if !found {
		return ErrNotFound
	}
	return nil
}
