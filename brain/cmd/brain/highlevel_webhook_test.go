package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/brain/api"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// webhookSigner signs deliveries as HighLevel does: Ed25519 over the raw body in X-GHL-Signature, or
// RSA-SHA256 in the legacy X-WH-Signature.
type webhookSigner struct {
	ed  ed25519.PrivateKey
	rsa *rsa.PrivateKey
}

func newWebhookSigner(t *testing.T) (*webhookSigner, string) {
	t.Helper()
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	rsaPriv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	var pems []string
	for _, pub := range []any{edPub, &rsaPriv.PublicKey} {
		der, err := x509.MarshalPKIXPublicKey(pub)
		require.NoError(t, err)
		pems = append(pems, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	}
	return &webhookSigner{ed: edPriv, rsa: rsaPriv}, strings.Join(pems, "")
}

func (s *webhookSigner) ghl(body []byte) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(s.ed, body))
}

func (s *webhookSigner) legacy(t *testing.T, body []byte) string {
	digest := sha256.Sum256(body)
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.rsa, crypto.SHA256, digest[:])
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(sig)
}

type webhookAnswer struct {
	OK        bool    `json:"ok"`
	Status    string  `json:"status"`
	Duplicate bool    `json:"duplicate"`
	Tool      string  `json:"tool"`
	CallID    *string `json:"call_id"`
	Reason    string  `json:"reason"`
	EventID   string  `json:"event_id"`
	Errors    []struct {
		Code string `json:"code"`
	} `json:"errors"`
}

// TestHighLevelWebhook delivers HighLevel events to the brain signed with a test key pair and follows
// each to the call it makes and the executor's receipt: a contact becomes a lead, its note, task,
// appointment and stage move are tied to that lead, a contact update patches the lead's entity, an event
// delivered twice makes one call, and unsigned, wrongly signed or malformed deliveries are refused.
func TestHighLevelWebhook(t *testing.T) {
	signer, keys := newWebhookSigner(t)
	// The webhook's keys and the pipeline's stages, read from the brain's environment.
	env := map[string]string{api.EnvHighLevelWebhookPublicKeys: keys, "GEM_HIGHLEVEL_PIPELINE_ID": "pipe1",
		"GEM_HIGHLEVEL_STAGE_IDS": "quoted=stage-q,inspected=stage-i"}
	m, err := startBrain(shared.dbURL, func(c *Config) {
		fromEnv, err := ConfigFromEnv(func(k string) string { return env[k] })
		require.NoError(t, err)
		c.HighLevel = fromEnv.HighLevel
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a := &testAPI{t: t, url: m.Server.URL(), token: testToken}
	ctx := context.Background()

	deliver := func(body []byte, header http.Header) (int, webhookAnswer) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, a.url+api.HighLevelWebhookPath, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = header
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Less(t, time.Since(start), 2*time.Second, "HighLevel wants a quick answer")
		var ans webhookAnswer
		require.NoError(t, json.Unmarshal(raw, &ans), "%s", raw)
		return resp.StatusCode, ans
	}
	signed := func(event map[string]any) (int, webhookAnswer) {
		t.Helper()
		body, err := json.Marshal(event)
		require.NoError(t, err)
		return deliver(body, http.Header{"X-GHL-Signature": {signer.ghl(body)}})
	}
	// receipt waits for the call's receipt and requires it succeeded.
	receipt := func(ans webhookAnswer) map[string]any {
		t.Helper()
		require.Equal(t, "enqueued", ans.Status, "%+v", ans)
		require.NotNil(t, ans.CallID)
		var got struct {
			Receipt *registry.Receipt `json:"receipt"`
		}
		require.Equal(t, http.StatusOK, a.do(http.MethodGet, "/calls/"+*ans.CallID+"?wait=20s", nil, &got))
		require.NotNil(t, got.Receipt, "no receipt for %s", ans.Tool)
		require.Equal(t, registry.StatusSucceeded, got.Receipt.Status, "%s: %+v", ans.Tool, got.Receipt.Error)
		var result map[string]any
		require.NoError(t, json.Unmarshal(got.Receipt.Result, &result))
		return result
	}
	calls := func(tool string) int {
		var n int
		require.NoError(t, m.Pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE requested_by = 'highlevel-webhook' AND tool_name = $1`, tool).Scan(&n))
		return n
	}
	suffix := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	contact := "hl-" + suffix
	// A number no other test uses, in a mobile range in use (the executor refuses a number that is none).
	phone := "+61412" + strings.Map(func(r rune) rune { return '0' + r%10 }, suffix)[2:]

	// Refusals: unsigned, wrongly signed, signed with another key, malformed.
	event := map[string]any{"type": "ContactCreate", "webhookId": "w-create-" + suffix, "locationId": "loc1", "id": contact,
		"firstName": "Kim", "lastName": "Nguyen", "phone": phone, "email": "kim." + suffix + "@example.com", "city": "Newtown"}
	body, _ := json.Marshal(event)
	status, ans := deliver(body, http.Header{})
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "unauthorized", ans.Errors[0].Code)
	status, _ = deliver(body, http.Header{"X-GHL-Signature": {signer.ghl([]byte(`{"type": "other"}`))}})
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = deliver(body, http.Header{"X-GHL-Signature": {"bm90IGEgc2lnbmF0dXJl"}})
	require.Equal(t, http.StatusUnauthorized, status)
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	status, _ = deliver(body, http.Header{"X-GHL-Signature": {base64.StdEncoding.EncodeToString(ed25519.Sign(stranger, body))}})
	require.Equal(t, http.StatusUnauthorized, status)
	for _, bad := range []string{`{"type": `, `[1, 2]`, `{"id": "no type"}`, `{"type": "NoteCreate", "body": "a\u0000b"}`} {
		status, ans = deliver([]byte(bad), http.Header{"X-GHL-Signature": {signer.ghl([]byte(bad))}})
		require.Equal(t, http.StatusBadRequest, status, bad)
		require.Equal(t, "invalid", ans.Errors[0].Code)
	}
	require.Zero(t, calls("leads.create"))

	// ContactCreate: a lead. Delivered twice: one call.
	status, created := signed(event)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "leads.create", created.Tool)
	lead := receipt(created)["lead_id"].(string)
	status, again := signed(event)
	require.Equal(t, http.StatusOK, status)
	require.True(t, again.Duplicate)
	require.Equal(t, *created.CallID, *again.CallID)
	var leadCalls int
	require.NoError(t, m.Pool.QueryRow(ctx, `SELECT count(*) FROM core_tool_calls WHERE requested_by = 'highlevel-webhook' AND input ->> 'phone' = $1`,
		phone).Scan(&leadCalls))
	require.Equal(t, 1, leadCalls)

	// A note, a task and an appointment for the contact: tied to the lead (found by the contact's phone).
	_, ans = signed(map[string]any{"type": "NoteCreate", "webhookId": "w-note-" + suffix, "locationId": "loc1", "id": "n1",
		"contactId": contact, "body": "Wants a quote for the whole roof.\nCall after 3pm."})
	require.Equal(t, "os.create_note", ans.Tool)
	noteID := receipt(ans)["note_id"].(string)
	var noteCall json.RawMessage
	require.NoError(t, m.Pool.QueryRow(ctx, `SELECT input FROM core_tool_calls WHERE id = $1`, *ans.CallID).Scan(&noteCall))
	require.Contains(t, string(noteCall), lead)
	require.NotEmpty(t, noteID)

	_, ans = signed(map[string]any{"type": "TaskCreate", "webhookId": "w-task-" + suffix, "locationId": "loc1", "id": "t1",
		"contactId": contact, "title": "Call Kim back", "body": "About the quote", "dueDate": "2030-11-26T12:41:02.193Z"})
	require.Equal(t, "os.create_task", ans.Tool)
	require.NotEmpty(t, receipt(ans)["task_id"])

	_, ans = signed(map[string]any{"type": "AppointmentCreate", "webhookId": "w-appt-" + suffix, "locationId": "loc1",
		"appointment": map[string]any{"id": "a1", "contactId": contact, "title": "Roof inspection", "startTime": "2030-03-15T10:00:00+11:00",
			"endTime": "2030-03-15T11:00:00+11:00", "address": "12 Smith St, Newtown", "appointmentStatus": "confirmed"}})
	require.Equal(t, "calendar.create_event", ans.Tool)
	require.NotEmpty(t, receipt(ans)["event_id"])

	// A stage move in the followed pipeline: the lead moves; another pipeline or an unmapped stage is ignored.
	_, ans = signed(map[string]any{"type": "OpportunityStageUpdate", "webhookId": "w-stage-" + suffix, "locationId": "loc1", "id": "o1",
		"contactId": contact, "pipelineId": "pipe1", "pipelineStageId": "stage-q", "name": "Kim roof", "status": "open"})
	require.Equal(t, "leads.update_stage", ans.Tool)
	receipt(ans)
	var stage string
	require.NoError(t, m.Pool.QueryRow(ctx, `SELECT stage FROM leads WHERE id = $1`, lead).Scan(&stage))
	require.Equal(t, "quoted", stage)
	_, ans = signed(map[string]any{"type": "OpportunityStageUpdate", "webhookId": "w-stage2-" + suffix, "contactId": contact,
		"pipelineId": "other", "pipelineStageId": "stage-q"})
	require.Equal(t, "ignored", ans.Status)
	_, ans = signed(map[string]any{"type": "OpportunityStageUpdate", "webhookId": "w-stage3-" + suffix, "contactId": contact,
		"pipelineId": "pipe1", "pipelineStageId": "stage-unknown"})
	require.Equal(t, "ignored", ans.Status)
	require.Contains(t, ans.Reason, "GEM_HIGHLEVEL_STAGE_IDS")

	// ContactUpdate: the lead's entity is patched (with no entity, the update is ignored, saying why).
	update := map[string]any{"type": "ContactUpdate", "webhookId": "w-update1-" + suffix, "locationId": "loc1", "id": contact,
		"firstName": "Kim", "lastName": "Nguyen-Tran", "phone": phone, "email": "kim.nt." + suffix + "@example.com", "city": "Enmore"}
	_, ans = signed(update)
	require.Equal(t, "ignored", ans.Status)
	require.Contains(t, ans.Reason, "no entity")
	var entity string
	require.NoError(t, m.Pool.QueryRow(ctx, `INSERT INTO entities (kind, name, lead_id) VALUES ('client', 'Kim Nguyen', $1) RETURNING id`, lead).Scan(&entity))
	update["webhookId"] = "w-update2-" + suffix
	_, ans = signed(update)
	require.Equal(t, "entity.update", ans.Tool)
	receipt(ans)
	var name, email, suburb string
	require.NoError(t, m.Pool.QueryRow(ctx, `SELECT name, email, suburb FROM entities WHERE id = $1`, entity).Scan(&name, &email, &suburb))
	require.Equal(t, "Kim Nguyen-Tran", name)
	require.Equal(t, "kim.nt."+suffix+"@example.com", email)
	require.Equal(t, "Enmore", suburb)

	// The legacy RSA signature is accepted; an event without a webhookId is known by its bytes.
	legacy := []byte(`{"type": "NoteCreate", "contactId": "` + contact + `", "id": "n2", "body": "Signed the old way"}`)
	status, ans = deliver(legacy, http.Header{"X-WH-Signature": {signer.legacy(t, legacy)}})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "os.create_note", ans.Tool)
	require.True(t, strings.HasPrefix(ans.EventID, "sha256:"))
	_, again = deliver(legacy, http.Header{"X-WH-Signature": {signer.legacy(t, legacy)}})
	require.True(t, again.Duplicate)
	require.Equal(t, *ans.CallID, *again.CallID)

	// Events GEM does not act on are recorded and answered 200.
	status, ans = signed(map[string]any{"type": "InboundMessage", "webhookId": "w-msg-" + suffix, "contactId": contact, "body": "hi"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ignored", ans.Status)
	require.Nil(t, ans.CallID)

	var events int
	require.NoError(t, m.Pool.QueryRow(ctx, `SELECT count(*) FROM integration_webhook_events WHERE event_id LIKE '%' || $1 OR payload ->> 'contactId' = $2`,
		suffix, contact).Scan(&events))
	require.Equal(t, 11, events, "one row per event, however often delivered")
}
