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
	"time"

	"github.com/gemhq/gem/brain"
	"github.com/gemhq/gem/registry/phone"
	gemsql "github.com/gemhq/gem/sql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// HighLevel's inbound webhook: POST HighLevelWebhookPath. HighLevel signs each delivery over its raw body:
// Ed25519 in X-GHL-Signature (base64), and, on older apps, RSA-SHA256 (PKCS #1 v1.5) in X-WH-Signature
// (base64). A delivery whose signature does not verify with a configured key is refused with 401, a body
// that is not a JSON event with 400; a verified event is recorded once per webhookId and becomes a tool
// call (or is recorded as ignored, with the reason), answered 200 at once. docs/integrations.md has the
// mapping from events to calls.
const (
	// HighLevelWebhookPath is where HighLevel delivers events.
	HighLevelWebhookPath = "/integrations/highlevel/webhook"
	// EnvHighLevelWebhookPublicKeys holds the keys signatures are checked with: PEM public keys (Ed25519
	// for X-GHL-Signature, RSA for X-WH-Signature), or bare base64 DER (SubjectPublicKeyInfo), several
	// separated by commas or blank space. Defaults to HighLevelWebhookPublicKeyDefault.
	EnvHighLevelWebhookPublicKeys = "GEM_HIGHLEVEL_WEBHOOK_PUBLIC_KEYS"
	// HighLevelWebhookPublicKeyDefault is the Ed25519 key HighLevel publishes for X-GHL-Signature.
	HighLevelWebhookPublicKeyDefault = "MCowBQYDK2VwAyEAi2HR1srL4o18O8BRa7gVJY7G7bupbN3H9AwJrHCDiOg="
	// envHighLevelPipelineID and envHighLevelStageIDs are the executor's pipeline settings
	// (GEM_HIGHLEVEL_PIPELINE_ID, GEM_HIGHLEVEL_STAGE_IDS), read here to map stage moves back.
	envHighLevelPipelineID = "GEM_HIGHLEVEL_PIPELINE_ID"
	envHighLevelStageIDs   = "GEM_HIGHLEVEL_STAGE_IDS"
	// highLevelRequester is core_tool_calls.requested_by of the calls made from events.
	highLevelRequester = "highlevel-webhook"
)

// HighLevelWebhookConfig configures the webhook.
type HighLevelWebhookConfig struct {
	// Ed25519Keys verify X-GHL-Signature. Defaults (with no RSAKeys either) to HighLevel's published key.
	Ed25519Keys []ed25519.PublicKey
	// RSAKeys verify the legacy X-WH-Signature. No default: add HighLevel's RSA key to accept it.
	RSAKeys []*rsa.PublicKey
	// PipelineID is the pipeline whose stage moves become leads.update_stage. No default (any pipeline).
	PipelineID string
	// StageByID maps HighLevel pipeline stage ids to GEM stages. No default (stage moves are ignored).
	StageByID map[string]string
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
	cfg.PipelineID = strings.TrimSpace(getenv(envHighLevelPipelineID))
	if region, err := phone.Region(getenv); err != nil && cfg.Err == nil {
		cfg.Err = err
	} else {
		cfg.PhoneRegion = region
	}
	cfg.StageByID = map[string]string{}
	for _, pair := range strings.Split(getenv(envHighLevelStageIDs), ",") {
		if stage, id, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.TrimSpace(id) != "" {
			cfg.StageByID[strings.TrimSpace(id)] = strings.TrimSpace(stage)
		}
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

// highLevelEvent is the part of a webhook event GEM reads. Events are flat objects (type, locationId and
// the record's fields); some deliveries wrap the record in data or appointment.
type highLevelEvent struct {
	Type        string          `json:"type"`
	WebhookID   string          `json:"webhookId"`
	LocationID  string          `json:"locationId"`
	ID          string          `json:"id"`
	ContactID   string          `json:"contactId"`
	FirstName   string          `json:"firstName"`
	LastName    string          `json:"lastName"`
	Name        string          `json:"name"`
	CompanyName string          `json:"companyName"`
	Email       string          `json:"email"`
	Phone       string          `json:"phone"`
	Address1    string          `json:"address1"`
	City        string          `json:"city"`
	State       string          `json:"state"`
	PostalCode  string          `json:"postalCode"`
	Title       string          `json:"title"`
	Body        string          `json:"body"`
	DueDate     string          `json:"dueDate"`
	PipelineID  string          `json:"pipelineId"`
	StageID     string          `json:"pipelineStageId"`
	Status      string          `json:"status"`
	StartTime   string          `json:"startTime"`
	EndTime     string          `json:"endTime"`
	Address     string          `json:"address"`
	Data        json.RawMessage `json:"data"`
	Appointment *hlAppointment  `json:"appointment"`
}

// hlAppointment is an AppointmentCreate's appointment.
type hlAppointment struct {
	ID        string `json:"id"`
	ContactID string `json:"contactId"`
	Title     string `json:"title"`
	StartTime string `json:"startTime"`
	EndTime   string `json:"endTime"`
	Address   string `json:"address"`
}

// parseHighLevelEvent decodes a delivery, lifting a data envelope's fields to the top.
func parseHighLevelEvent(body []byte) (highLevelEvent, error) {
	var ev highLevelEvent
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

// contactName is the contact's name as people would say it.
func (ev highLevelEvent) contactName() string {
	if n := strings.TrimSpace(ev.Name); n != "" {
		return n
	}
	if n := strings.TrimSpace(ev.FirstName + " " + ev.LastName); n != "" {
		return n
	}
	return or(strings.TrimSpace(ev.CompanyName), or(strings.TrimSpace(ev.Email), "HighLevel contact "+ev.ID))
}

// plannedCall is what an event becomes: a call, or nothing and why.
type plannedCall struct {
	tool   string
	input  map[string]any
	reason string
}

func ignore(format string, args ...any) plannedCall {
	return plannedCall{reason: fmt.Sprintf(format, args...)}
}

// parseEventTime reads a HighLevel time (RFC 3339, or without a zone, taken as UTC).
func parseEventTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// truncate cuts s to n characters.
func truncate(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// findLead is the GEM lead of a HighLevel contact: the lead tied to it, or the lead with the phone number
// the contact's events gave (read in region, as the executor reads leads' numbers: gemsql.LeadByPhoneSQL).
func findLead(ctx context.Context, tx pgx.Tx, region, contactID, typed string) (*uuid.UUID, error) {
	if contactID == "" && strings.TrimSpace(typed) == "" {
		return nil, nil
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id FROM leads WHERE highlevel_contact_id = $1`, contactID).Scan(&id)
	if err == nil {
		return &id, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if strings.TrimSpace(typed) == "" {
		err = tx.QueryRow(ctx, `SELECT e.payload ->> 'phone' FROM integration_webhook_events e
			WHERE e.provider = 'highlevel' AND e.payload ->> 'id' = $1 AND e.payload ->> 'phone' <> ''
			  AND e.event_type IN ('ContactCreate', 'ContactUpdate')
			ORDER BY e.received_at DESC LIMIT 1`, contactID).Scan(&typed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	number, err := phone.Parse(typed, region)
	if err != nil {
		return nil, nil // no lead has a number that is not one
	}
	err = tx.QueryRow(ctx, gemsql.LeadByPhoneSQL("id", ""), gemsql.LeadByPhoneArgs(number)...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// planHighLevelCall turns an event into the GEM call it stands for.
func (cfg HighLevelWebhookConfig) planHighLevelCall(ctx context.Context, tx pgx.Tx, ev highLevelEvent) (plannedCall, error) {
	switch ev.Type {
	case "ContactCreate", "ContactUpdate":
		lead, err := findLead(ctx, tx, cfg.PhoneRegion, ev.ID, ev.Phone)
		if err != nil {
			return plannedCall{}, err
		}
		if lead != nil {
			if ev.Type == "ContactCreate" {
				return ignore("contact %s is already lead %s", ev.ID, lead), nil
			}
			var entity uuid.UUID
			err := tx.QueryRow(ctx, `SELECT id FROM entities WHERE lead_id = $1 ORDER BY created_at LIMIT 1`, *lead).Scan(&entity)
			if errors.Is(err, pgx.ErrNoRows) {
				return ignore("lead %s has no entity to update; integrations.highlevel.sync_contacts brings the lead up to date", lead), nil
			}
			if err != nil {
				return plannedCall{}, err
			}
			contact := map[string]any{}
			for k, v := range map[string]string{"phone": ev.Phone, "email": ev.Email, "address": ev.Address1, "suburb": ev.City,
				"postcode": ev.PostalCode, "state": ev.State} {
				if v = strings.TrimSpace(v); v != "" {
					contact[k] = v
				}
			}
			patch := map[string]any{"name": ev.contactName()}
			if len(contact) > 0 {
				patch["contact"] = contact
			}
			return plannedCall{tool: "entity.update", input: map[string]any{"entity_id": entity.String(), "patch": patch}}, nil
		}
		if strings.TrimSpace(ev.Phone) == "" {
			return ignore("contact %s has no phone number, which a GEM lead needs", ev.ID), nil
		}
		input := map[string]any{"name": ev.contactName(), "phone": strings.TrimSpace(ev.Phone),
			"suburb": or(strings.TrimSpace(ev.City), "not given"), "source": "other", "notes": "From HighLevel contact " + ev.ID}
		if e := strings.TrimSpace(ev.Email); e != "" {
			input["email"] = e
		}
		return plannedCall{tool: "leads.create", input: input}, nil

	case "AppointmentCreate":
		a := ev.Appointment
		if a == nil {
			// The flat form: the appointment's fields at the top.
			a = &hlAppointment{ID: ev.ID, ContactID: ev.ContactID, Title: ev.Title, StartTime: ev.StartTime, EndTime: ev.EndTime, Address: ev.Address}
		}
		start, ok := parseEventTime(a.StartTime)
		if !ok {
			return ignore("appointment %s has no start time GEM can read (%q)", a.ID, a.StartTime), nil
		}
		end, ok := parseEventTime(a.EndTime)
		if !ok || !end.After(start) {
			end = start.Add(time.Hour)
		}
		input := map[string]any{"title": truncate(or(a.Title, "HighLevel appointment"), 200),
			"start_at": start.Format(time.RFC3339), "end_at": end.Format(time.RFC3339)}
		if addr := strings.TrimSpace(a.Address); addr != "" {
			input["location"] = addr
		}
		lead, err := findLead(ctx, tx, cfg.PhoneRegion, a.ContactID, "")
		if err != nil {
			return plannedCall{}, err
		}
		if lead != nil {
			input["context_ref"] = map[string]any{"type": "lead", "id": lead.String()}
		}
		return plannedCall{tool: "calendar.create_event", input: input}, nil

	case "OpportunityStageUpdate":
		if cfg.PipelineID != "" && ev.PipelineID != cfg.PipelineID {
			return ignore("the opportunity is in pipeline %s, not the one GEM follows (%s)", ev.PipelineID, envHighLevelPipelineID), nil
		}
		stage, ok := cfg.StageByID[ev.StageID]
		if !ok {
			return ignore("pipeline stage %s maps to no GEM stage (%s)", ev.StageID, envHighLevelStageIDs), nil
		}
		switch stage {
		case "new", "contacted", "inspection_scheduled", "quoted", "won", "lost":
		default:
			return ignore("GEM stage %s is not one leads.update_stage takes", stage), nil
		}
		lead, err := findLead(ctx, tx, cfg.PhoneRegion, ev.ContactID, "")
		if err != nil {
			return plannedCall{}, err
		}
		if lead == nil {
			return ignore("contact %s is no GEM lead", ev.ContactID), nil
		}
		return plannedCall{tool: "leads.update_stage", input: map[string]any{"lead_id": lead.String(), "stage": stage,
			"notes": truncate(fmt.Sprintf("Moved in HighLevel (opportunity %s)", or(ev.Name, ev.ID)), 400)}}, nil

	case "TaskCreate":
		if strings.TrimSpace(ev.Title) == "" {
			return ignore("task %s has no title", ev.ID), nil
		}
		input := map[string]any{"title": truncate(ev.Title, 200), "domain": "business"}
		if b := strings.TrimSpace(ev.Body); b != "" {
			input["description"] = b
		}
		if due, ok := parseEventTime(ev.DueDate); ok {
			input["due_at"] = due.Format(time.RFC3339)
		}
		lead, err := findLead(ctx, tx, cfg.PhoneRegion, ev.ContactID, "")
		if err != nil {
			return plannedCall{}, err
		}
		if lead != nil {
			input["context_ref"] = map[string]any{"type": "lead", "id": lead.String()}
		}
		return plannedCall{tool: "os.create_task", input: input}, nil

	case "NoteCreate":
		if strings.TrimSpace(ev.Body) == "" {
			return ignore("note %s is empty", ev.ID), nil
		}
		input := map[string]any{"domain": "business", "title": truncate("HighLevel note: "+strings.SplitN(strings.TrimSpace(ev.Body), "\n", 2)[0], 140),
			"content": ev.Body}
		lead, err := findLead(ctx, tx, cfg.PhoneRegion, ev.ContactID, "")
		if err != nil {
			return plannedCall{}, err
		}
		if lead != nil {
			input["entity_refs"] = []map[string]any{{"type": "lead", "id": lead.String()}}
		}
		return plannedCall{tool: "os.create_note", input: input}, nil
	}
	return ignore("GEM does not act on %s events", ev.Type), nil
}

// highLevelTools are the tools the webhook's events become calls of.
var highLevelTools = []string{"entity.update", "leads.create", "calendar.create_event", "leads.update_stage", "os.create_task", "os.create_note"}

// highLevelPermissions are what the webhook's caller is granted when the brain first records it: the
// permissions of the tools it calls, no more.
func (s *Server) highLevelPermissions() []string {
	var perms []string
	for _, name := range highLevelTools {
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
		body, err := readBody(c)
		if err != nil {
			return err
		}
		if err := cfg.verify(c.Request().Header, body); err != nil {
			return err
		}
		if err := checkText(body); err != nil {
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
func (s *Server) recordHighLevelEvent(ctx context.Context, cfg HighLevelWebhookConfig, ev highLevelEvent, eventID string, body []byte) (map[string]any, error) {
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
		plan, err := cfg.planHighLevelCall(ctx, tx, ev)
		if err != nil {
			return err
		}
		if plan.tool != "" {
			if problem := s.checkPlannedInput(plan); problem != "" {
				plan = ignore("%s", problem)
			}
		}
		resp["duplicate"] = false
		if plan.tool == "" {
			resp["status"], resp["reason"], resp["call_id"] = "ignored", plan.reason, nil
			_, err := tx.Exec(ctx, `UPDATE integration_webhook_events SET reason = $2 WHERE id = $1`, rowID, plan.reason)
			return err
		}
		input, _ := json.Marshal(plan.input)
		callID, err := gemsql.CallInsert(ctx, tx, gemsql.CallInsertParams{ToolName: plan.tool, Input: input, RequestedBy: highLevelRequester})
		if err != nil {
			return err
		}
		resp["status"], resp["tool"], resp["call_id"] = "enqueued", plan.tool, callID
		_, err = tx.Exec(ctx, `UPDATE integration_webhook_events SET status = 'enqueued', call_id = $2 WHERE id = $1`, rowID, callID)
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

// checkPlannedInput says why a planned call would be refused (its tool missing from the registry, its
// input not valid), or "".
func (s *Server) checkPlannedInput(plan plannedCall) string {
	tool, found := s.reg.Tool(plan.tool)
	if !found {
		return plan.tool + " is not in the registry"
	}
	raw, _ := json.Marshal(plan.input)
	if err := tool.ValidateInput(raw); err != nil {
		return fmt.Sprintf("the event does not make a valid %s input: %v", plan.tool, err)
	}
	return ""
}
