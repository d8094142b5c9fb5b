package api

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/brain/highlevel"
	"github.com/gemhq/gem/registry/phone"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// HighLevel's inbound webhook: POST HighLevelWebhookPath. HighLevel signs each delivery over its raw body:
// Ed25519 in X-GHL-Signature (base64), and, on older apps, RSA-SHA256 (PKCS #1 v1.5) in X-WH-Signature
// (base64). A delivery whose signature does not verify with a configured key is refused with 401, a body
// that is not a JSON event with 400; a verified event is recorded once per webhookId and becomes a tool
// call (or is recorded as ignored, with the reason), answered 200 at once. Which call an event makes is the
// integrations pack's to say (highlevel.Planner, handed in by Main): docs/integrations.md has the mapping.
const (
	// HighLevelWebhookPath is where HighLevel delivers events.
	HighLevelWebhookPath = "/integrations/highlevel/webhook"
	// EnvHighLevelWebhookPublicKeys holds the keys signatures are checked with: PEM public keys (Ed25519
	// for X-GHL-Signature, RSA for X-WH-Signature), or bare base64 DER (SubjectPublicKeyInfo), several
	// separated by commas or blank space. Defaults to HighLevelWebhookPublicKeyDefault.
	EnvHighLevelWebhookPublicKeys = "GEM_HIGHLEVEL_WEBHOOK_PUBLIC_KEYS"
	// HighLevelWebhookPublicKeyDefault is the Ed25519 key HighLevel publishes for X-GHL-Signature.
	HighLevelWebhookPublicKeyDefault = "MCowBQYDK2VwAyEAi2HR1srL4o18O8BRa7gVJY7G7bupbN3H9AwJrHCDiOg="
	// highLevelRequester is core_tool_calls.requested_by of the calls made from events.
	highLevelRequester = "highlevel-webhook"
)

// HighLevelWebhookConfig configures the webhook.
type HighLevelWebhookConfig struct {
	// Ed25519Keys verify X-GHL-Signature. Defaults (with no RSAKeys either) to HighLevel's published key.
	Ed25519Keys []ed25519.PublicKey
	// RSAKeys verify the legacy X-WH-Signature. No default: add HighLevel's RSA key to accept it.
	RSAKeys []*rsa.PublicKey
	// PhoneRegion is the region a contact's phone number without a country code is read in to find its
	// lead, as the executor reads leads' numbers (GEM_PHONE_REGION). Defaults to phone.RegionDefault.
	PhoneRegion string
	// Err is what was wrong with the configuration; the webhook then answers 503 to every delivery.
	Err error
}

// HighLevelWebhookConfigFromEnv reads the webhook's configuration through getenv.
func HighLevelWebhookConfigFromEnv(getenv func(string) string) HighLevelWebhookConfig {
	var cfg HighLevelWebhookConfig
	if keys := strings.TrimSpace(getenv(EnvHighLevelWebhookPublicKeys)); keys != "" {
		cfg.Ed25519Keys, cfg.RSAKeys, cfg.Err = parsePublicKeys(keys)
	}
	if region, err := phone.Region(getenv); err != nil && cfg.Err == nil {
		cfg.Err = err
	} else {
		cfg.PhoneRegion = region
	}
	return cfg
}

// withDefaults gives a configuration without keys HighLevel's published key.
func (cfg HighLevelWebhookConfig) withDefaults() HighLevelWebhookConfig {
	if cfg.Err == nil && len(cfg.Ed25519Keys)+len(cfg.RSAKeys) == 0 {
		cfg.Ed25519Keys, cfg.RSAKeys, cfg.Err = parsePublicKeys(HighLevelWebhookPublicKeyDefault)
	}
	if cfg.PhoneRegion == "" {
		cfg.PhoneRegion = phone.RegionDefault
	}
	return cfg
}

// parsePublicKeys reads PEM blocks, or base64 DER keys, of Ed25519 and RSA public keys.
func parsePublicKeys(s string) (eds []ed25519.PublicKey, rsas []*rsa.PublicKey, err error) {
	var ders [][]byte
	if strings.Contains(s, "-----BEGIN") {
		rest := []byte(strings.ReplaceAll(s, `\n`, "\n"))
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			ders = append(ders, block.Bytes)
		}
	} else {
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
			der, err := base64.StdEncoding.DecodeString(f)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %q is not base64", EnvHighLevelWebhookPublicKeys, f)
			}
			ders = append(ders, der)
		}
	}
	for _, der := range ders {
		key, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: a key is not a public key (SubjectPublicKeyInfo): %w", EnvHighLevelWebhookPublicKeys, err)
		}
		switch k := key.(type) {
		case ed25519.PublicKey:
			eds = append(eds, k)
		case *rsa.PublicKey:
			rsas = append(rsas, k)
		default:
			return nil, nil, fmt.Errorf("%s: a key is a %T, not Ed25519 or RSA", EnvHighLevelWebhookPublicKeys, key)
		}
	}
	if len(eds)+len(rsas) == 0 {
		return nil, nil, fmt.Errorf("%s holds no public key", EnvHighLevelWebhookPublicKeys)
	}
	return eds, rsas, nil
}

// verify checks the delivery's signature over its raw body.
func (cfg HighLevelWebhookConfig) verify(h http.Header, body []byte) error {
	ghl, legacy := strings.TrimSpace(h.Get("X-GHL-Signature")), strings.TrimSpace(h.Get("X-WH-Signature"))
	if ghl == "" && legacy == "" {
		return brain.Errorf(brain.EUNAUTHORIZED, "the delivery is not signed (no X-GHL-Signature or X-WH-Signature header)")
	}
	if ghl != "" && ghl != "N/A" {
		if sig, err := base64.StdEncoding.DecodeString(ghl); err == nil {
			for _, k := range cfg.Ed25519Keys {
				if ed25519.Verify(k, body, sig) {
					return nil
				}
			}
		}
	}
	if legacy != "" {
		if sig, err := base64.StdEncoding.DecodeString(legacy); err == nil {
			digest := sha256.Sum256(body)
			for _, k := range cfg.RSAKeys {
				if rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil {
					return nil
				}
			}
		}
	}
	return brain.Errorf(brain.EUNAUTHORIZED, "the delivery's signature does not verify with the configured HighLevel keys (%s)", EnvHighLevelWebhookPublicKeys)
}

// parseHighLevelEvent decodes a delivery, lifting a data envelope's fields to the top.
func parseHighLevelEvent(body []byte) (highlevel.Event, error) {
	var ev highlevel.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, brain.Errorf(brain.EINVALID, "the body is not a JSON event: %v", err)
	}
	if len(ev.Data) > 0 && ev.Data[0] == '{' {
		inner := ev
		if err := json.Unmarshal(ev.Data, &inner); err == nil {
			inner.Type, inner.WebhookID = or(ev.Type, inner.Type), or(ev.WebhookID, inner.WebhookID)
			ev = inner
		}
	}
	if strings.TrimSpace(ev.Type) == "" {
		return ev, brain.Errorf(brain.EINVALID, "the event has no type")
	}
	return ev, nil
}

func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// txRecords finds records in the delivery's transaction, reading phone numbers in region.
type txRecords struct {
	tx     pgx.Tx
	region string
}

func (r txRecords) Lead(ctx context.Context, contactID, typed string) (string, error) {
	if contactID == "" && strings.TrimSpace(typed) == "" {
		return "", nil
	}
	var id uuid.UUID
	err := r.tx.QueryRow(ctx, `SELECT id FROM leads WHERE highlevel_contact_id = $1`, contactID).Scan(&id)
	if err == nil {
		return id.String(), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	if strings.TrimSpace(typed) == "" {
		err = r.tx.QueryRow(ctx, `SELECT e.payload ->> 'phone' FROM integration_webhook_events e
			WHERE e.provider = 'highlevel' AND e.payload ->> 'id' = $1 AND e.payload ->> 'phone' <> ''
			  AND e.event_type IN ('ContactCreate', 'ContactUpdate')
			ORDER BY e.received_at DESC LIMIT 1`, contactID).Scan(&typed)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
	number, err := phone.Parse(typed, r.region)
	if err != nil {
		return "", nil // no lead has a number that is not one
	}
	err = r.tx.QueryRow(ctx, gemsql.LeadByPhoneSQL("id", ""), gemsql.LeadByPhoneArgs(number)...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

func (r txRecords) LeadEntity(ctx context.Context, leadID string) (string, error) {
	var entity uuid.UUID
	err := r.tx.QueryRow(ctx, `SELECT id FROM entities WHERE lead_id = $1 ORDER BY created_at LIMIT 1`, leadID).Scan(&entity)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return entity.String(), nil
}

// highLevelPermissions are what the webhook's caller is granted when the brain first records it: the
// permissions of the tools it calls, no more.
func (s *Server) highLevelPermissions() []string {
	var perms []string
	for _, name := range s.highLevel.Tools() {
		if t, ok := s.reg.Tool(name); ok {
			for _, p := range t.Permissions {
				if !slices.Contains(perms, p) {
					perms = append(perms, p)
				}
			}
		}
	}
	return perms
}

// highLevelWebhook verifies a delivery, records it once and makes its call, in one transaction.
func (s *Server) highLevelWebhook(cfg HighLevelWebhookConfig) echo.HandlerFunc {
	cfg = cfg.withDefaults()
	return func(c echo.Context) error {
		c.Set("principal", &principal{name: highLevelRequester})
		if cfg.Err != nil {
			return brain.Errorf(brain.EUNAVAILABLE, "the HighLevel webhook is misconfigured: %v", cfg.Err)
		}
		if s.highLevel == nil {
			return brain.Errorf(brain.EUNAVAILABLE, "the HighLevel webhook has no planner: the brain was started without the integrations pack's")
		}
		body, err := readBody(c)
		if err != nil {
			return err
		}
		if err := cfg.verify(c.Request().Header, body); err != nil {
			return err
		}
		if err := brain.CheckText(body); err != nil {
			return err
		}
		ev, err := parseHighLevelEvent(body)
		if err != nil {
			return err
		}
		eventID := strings.TrimSpace(ev.WebhookID)
		if eventID == "" {
			// Without HighLevel's id, the same delivery again is the same bytes.
			sum := sha256.Sum256(body)
			eventID = "sha256:" + hex.EncodeToString(sum[:])
		}
		resp, err := s.recordHighLevelEvent(c.Request().Context(), cfg, ev, eventID, body)
		if err != nil {
			return err
		}
		return ok(c, http.StatusOK, resp)
	}
}

// recordHighLevelEvent records the event and makes its call, unless the event was recorded before.
func (s *Server) recordHighLevelEvent(ctx context.Context, cfg HighLevelWebhookConfig, ev highlevel.Event, eventID string, body []byte) (map[string]any, error) {
	resp := map[string]any{"event_id": eventID, "event_type": ev.Type}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var rowID uuid.UUID
		err := tx.QueryRow(ctx, `INSERT INTO integration_webhook_events (provider, event_id, event_type, location_id, status, payload)
			VALUES ('highlevel', $1, $2, nullif($3, ''), 'ignored', $4)
			ON CONFLICT (provider, event_id) DO NOTHING RETURNING id`, eventID, ev.Type, ev.LocationID, json.RawMessage(body)).Scan(&rowID)
		if errors.Is(err, pgx.ErrNoRows) {
			// Delivered before: answer as then, make nothing new.
			var status string
			var callID *uuid.UUID
			if err := tx.QueryRow(ctx, `SELECT status, call_id FROM integration_webhook_events WHERE provider = 'highlevel' AND event_id = $1`,
				eventID).Scan(&status, &callID); err != nil {
				return err
			}
			resp["status"], resp["duplicate"], resp["call_id"] = status, true, callID
			return nil
		}
		if err != nil {
			return err
		}
		plan, err := s.highLevel.Plan(ctx, ev, txRecords{tx: tx, region: cfg.PhoneRegion})
		if err != nil {
			return err
		}
		var input json.RawMessage
		if plan.Tool != "" {
			if input, err = s.checkPlannedInput(plan); err != nil {
				plan = highlevel.Call{Reason: err.Error()}
			}
		}
		resp["duplicate"] = false
		if plan.Tool == "" {
			resp["status"], resp["reason"], resp["call_id"] = "ignored", plan.Reason, nil
			_, err := tx.Exec(ctx, `UPDATE integration_webhook_events SET reason = $2 WHERE id = $1`, rowID, plan.Reason)
			return err
		}
		made, err := gemsql.CallInsert(ctx, tx, gemsql.CallInsertParams{ToolName: plan.Tool, Input: input, RequestedBy: highLevelRequester})
		if err != nil {
			return err
		}
		resp["status"], resp["tool"], resp["call_id"] = "enqueued", plan.Tool, made[0].ID
		_, err = tx.Exec(ctx, `UPDATE integration_webhook_events SET status = 'enqueued', call_id = $2 WHERE id = $1`, rowID, made[0].ID)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			// The database, not the delivery, failed: HighLevel may deliver again later.
			return nil, &brain.Error{Code: brain.EUNAVAILABLE, Message: "the event could not be recorded; deliver it again",
				Details: map[string]any{"error": err.Error()}}
		}
		return nil, err
	}
	return resp, nil
}

// checkPlannedInput is a planned call's input as JSON, or why the call would be refused (its tool missing
// from the registry, its input not valid).
func (s *Server) checkPlannedInput(plan highlevel.Call) (json.RawMessage, error) {
	tool, found := s.reg.Tool(plan.Tool)
	if !found {
		return nil, fmt.Errorf("%s is not in the registry", plan.Tool)
	}
	raw, err := json.Marshal(plan.Input)
	if err == nil {
		err = tool.ValidateInput(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("the event does not make a valid %s input: %v", plan.Tool, err)
	}
	return raw, nil
}
