package businesshandlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	oshandlers "github.com/gemhq/gem/packs/os/handlers"
	"github.com/gemhq/gem/registry/phone"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerEntity(h executor.Handlers, p *pack) {
	h.Func(businesspack.CreateEntity, executor.Typed(p.createEntity))
	h.Func(businesspack.UpdateEntity, executor.Typed(p.updateEntity))
	h.Func(businesspack.GetEntity, executor.Typed(getEntity))
	h.Func(businesspack.SearchEntities, executor.Typed(p.searchEntities))
	h.Func(businesspack.LinkEntityConversation, executor.Typed(linkEntityToConversation))
	h.Func(businesspack.AddInteraction, executor.Typed(addEntityInteraction))
	h.Func(businesspack.AddAddressSiteDetails, executor.Typed(addEntitySiteDetails))
}

// entityTypes are GEM's kinds of entity. Rows may also be "site" (a property under its client, from before
// GEM's types), which no tool creates any more.
var entityTypes = []string{"client", "supplier", "partner", "friend", "lead", "other"}

// contactKeys are the keys of an entity's contact object, each a column of entities.
var contactKeys = []string{"phone", "email", "address", "suburb", "postcode", "state"}

// entityContact is how to reach an entity and where it is.
type entityContact struct {
	Phone    *string `json:"phone"`
	Email    *string `json:"email"`
	Address  *string `json:"address"`
	Suburb   *string `json:"suburb"`
	Postcode *string `json:"postcode"`
	State    *string `json:"state"`
}

// field returns the contact's field for a key of contactKeys.
func (ct *entityContact) field(key string) **string {
	return map[string]**string{"phone": &ct.Phone, "email": &ct.Email, "address": &ct.Address, "suburb": &ct.Suburb,
		"postcode": &ct.Postcode, "state": &ct.State}[key]
}

// entity is a client, supplier, partner, friend, lead or other contact (or an old site).
type entity struct {
	EntityID    uuid.UUID      `json:"entity_id"`
	EntityType  string         `json:"entity_type"`
	Name        string         `json:"name"`
	Contact     entityContact  `json:"contact"`
	Notes       *string        `json:"notes"`
	SiteDetails map[string]any `json:"site_details"`
	ParentID    *uuid.UUID     `json:"parent_id"`
	LeadID      *uuid.UUID     `json:"lead_id"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

const entityColumns = `id, kind, name, phone, email, address, suburb, postcode, state, notes, site_details, parent_id, lead_id,
	created_at, updated_at`

func scanEntity(row pgx.Row) (entity, error) {
	var e entity
	ct := &e.Contact
	err := row.Scan(&e.EntityID, &e.EntityType, &e.Name, &ct.Phone, &ct.Email, &ct.Address, &ct.Suburb, &ct.Postcode, &ct.State,
		&e.Notes, &e.SiteDetails, &e.ParentID, &e.LeadID, &e.CreatedAt, &e.UpdatedAt)
	return e, err
}

// requireEntity checks that an entity exists and is of the kind given ("customer" is the old name of
// "client"), and keeps it from being deleted for the rest of the call.
func requireEntity(ctx context.Context, c *executor.Call, id uuid.UUID, kind string) error {
	if kind == "customer" {
		kind = "client"
	}
	var got string
	if err := c.DB.QueryRow(ctx, `SELECT kind FROM entities WHERE id = $1 FOR SHARE`, id).Scan(&got); err != nil {
		return executor.NotFoundIfNoRows(err, "entity", id)
	}
	if got != kind {
		return executor.Invalid("entity %s is a %s, not a %s", id, got, kind)
	}
	return nil
}

// requireEntityExists checks that an entity exists and keeps it for the rest of the call.
func requireEntityExists(ctx context.Context, c *executor.Call, id uuid.UUID) error {
	var one int
	err := c.DB.QueryRow(ctx, `SELECT 1 FROM entities WHERE id = $1 FOR KEY SHARE`, id).Scan(&one)
	return executor.NotFoundIfNoRows(err, "entity", id)
}

// requireLeadExists checks that a lead exists and keeps it for the rest of the call.
func requireLeadExists(ctx context.Context, c *executor.Call, id uuid.UUID) error {
	var one int
	err := c.DB.QueryRow(ctx, `SELECT 1 FROM leads WHERE id = $1 FOR KEY SHARE`, id).Scan(&one)
	return executor.NotFoundIfNoRows(err, "lead", id)
}

// readContact reads a contact object: keys of contactKeys with text values; null (or blank text) clears a
// key. A phone must be a phone number (kept as typed; see readPhone) and an email an address.
func (p *pack) readContact(field string, raw json.RawMessage) (map[string]*string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, executor.Invalid("%s must be an object of %s", field, strings.Join(contactKeys, ", "))
	}
	out := map[string]*string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(contactKeys, k) {
			return nil, executor.Invalid("%s.%s is not a contact field; the fields are %s", field, k, strings.Join(contactKeys, ", "))
		}
		v, err := readPatchText(field+"."+k, m[k])
		if err != nil {
			return nil, err
		}
		if v != nil {
			switch k {
			case "phone":
				if _, err := p.readPhone(field+".phone", *v); err != nil {
					return nil, err
				}
			case "email":
				a, err := mail.ParseAddress(*v)
				if err != nil {
					return nil, executor.Invalid("%s.email %q is not an email address", field, *v)
				}
				v = &a.Address
			}
		}
		out[k] = v
	}
	return out, nil
}

// checkPatchKeys refuses an empty patch and a key that is not one of keys (entity.update,
// calendar.update_event).
func checkPatchKeys(patch map[string]json.RawMessage, keys []string) error {
	if len(patch) == 0 {
		return executor.Invalid("patch is empty: give one or more of %s", strings.Join(keys, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		if !slices.Contains(keys, k) {
			return executor.Invalid("patch.%s cannot be changed; the patch keys are %s", k, strings.Join(keys, ", "))
		}
	}
	return nil
}

// readPatchName reads a patch's name or title: text, checked by checkEntityName.
func readPatchName(field string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", executor.Invalid("%s must be text", field)
	}
	return checkEntityName(field, s)
}

// readPatchText reads a JSON string (trimmed; blank is nil) or null.
func readPatchText(field string, raw json.RawMessage) (*string, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, executor.Invalid("%s must be text", field)
	}
	if s == nil {
		return nil, nil
	}
	t := strings.TrimSpace(*s)
	if t == "" {
		return nil, nil
	}
	return &t, nil
}

// checkName refuses a blank name or one longer than 200 characters.
func checkEntityName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", executor.Invalid("%s is empty", field)
	}
	if utf8.RuneCountInString(name) > 200 {
		return "", executor.Invalid("%s is longer than 200 characters", field)
	}
	return name, nil
}

// createEntityInput is entity.create's input as the handler reads it: the contact key by key, notes kept as
// given (null or left out is none), and a lead_id that is not a UUID refused even when empty.
type createEntityInput struct {
	businesspack.CreateEntityInput
	Contact json.RawMessage `json:"contact"`
	Notes   *string         `json:"notes"`
	LeadID  *uuid.UUID      `json:"lead_id"`
}

type entityCreated struct {
	EntityID uuid.UUID `json:"entity_id"`
	Entity   entity    `json:"entity"`
}

// createEntity records a client, supplier, partner, friend, lead or other contact.
func (p *pack) createEntity(ctx context.Context, c *executor.Call, in createEntityInput) (*entityCreated, error) {
	name, err := checkEntityName("name", in.Name)
	if err != nil {
		return nil, err
	}
	var ct entityContact
	if len(in.Contact) > 0 && string(in.Contact) != "null" {
		fields, err := p.readContact("contact", in.Contact)
		if err != nil {
			return nil, err
		}
		for k, v := range fields {
			*ct.field(k) = v
		}
	}
	if in.LeadID != nil {
		if err := requireLeadExists(ctx, c, *in.LeadID); err != nil {
			return nil, err
		}
	}
	e, err := scanEntity(c.DB.QueryRow(ctx, `INSERT INTO entities (kind, name, phone, email, address, suburb, postcode, state, notes, lead_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+entityColumns,
		in.EntityType, name, ct.Phone, ct.Email, ct.Address, ct.Suburb, ct.Postcode, ct.State, in.Notes, in.LeadID))
	if err != nil {
		return nil, err
	}
	return &entityCreated{EntityID: e.EntityID, Entity: e}, nil
}

// entityPatchKeys are the keys entity.update's patch may hold.
var entityPatchKeys = []string{"name", "entity_type", "notes", "contact", "lead_id"}

// updateEntityInput is entity.update's input as the handler reads it: the patch key by key, since a key
// left out keeps a field and null clears it (businesspack.EntityPatch, which rules build, cannot say null).
type updateEntityInput struct {
	businesspack.UpdateEntityInput
	Patch map[string]json.RawMessage `json:"patch"`
}

type updateEntityOutput struct {
	EntityID      uuid.UUID `json:"entity_id"`
	UpdatedFields []string  `json:"updated_fields"`
	Entity        entity    `json:"entity"`
}

// updateEntity applies a patch: the keys given change (null clears notes, lead_id and contact fields; the
// contact object is merged key by key). Only what changes is written, so repeating an update writes nothing.
func (p *pack) updateEntity(ctx context.Context, c *executor.Call, in updateEntityInput) (*updateEntityOutput, error) {
	entityID, err := executor.RecordID("entity_id", in.EntityID)
	if err != nil {
		return nil, err
	}
	if err := checkPatchKeys(in.Patch, entityPatchKeys); err != nil {
		return nil, err
	}
	current, err := scanEntity(c.DB.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1 FOR UPDATE`, entityID))
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "entity", entityID)
	}
	next := current
	updated := []string{}
	var sets []string
	args := []any{entityID}
	set := func(field, column string, value any) {
		updated = append(updated, field)
		args = append(args, value)
		sets = append(sets, fmt.Sprintf("%s = $%d", column, len(args)))
	}

	if raw, ok := in.Patch["name"]; ok {
		name, err := readPatchName("patch.name", raw)
		if err != nil {
			return nil, err
		}
		if name != current.Name {
			next.Name = name
			set("name", "name", name)
		}
	}
	if raw, ok := in.Patch["entity_type"]; ok {
		var typ string
		if err := json.Unmarshal(raw, &typ); err != nil || !slices.Contains(entityTypes, typ) {
			return nil, executor.Invalid("patch.entity_type must be one of %s", strings.Join(entityTypes, ", "))
		}
		if typ != current.EntityType {
			if current.EntityType == "site" {
				return nil, executor.Conflict("entity %s is a site under its client; its type cannot change", entityID)
			}
			next.EntityType = typ
			set("entity_type", "kind", typ)
		}
	}
	if raw, ok := in.Patch["notes"]; ok {
		notes, err := readPatchText("patch.notes", raw)
		if err != nil {
			return nil, err
		}
		if !executor.SamePtr(notes, current.Notes) {
			next.Notes = notes
			set("notes", "notes", notes)
		}
	}
	if raw, ok := in.Patch["contact"]; ok {
		fields, err := p.readContact("patch.contact", raw)
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if v := fields[k]; !executor.SamePtr(v, *current.Contact.field(k)) {
				*next.Contact.field(k) = v
				set("contact."+k, k, v) // column names come from contactKeys, never from the input
			}
		}
	}
	if raw, ok := in.Patch["lead_id"]; ok {
		var s *string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, executor.Invalid("patch.lead_id must be a lead's id or null")
		}
		leadID, err := nullableRecordID("patch.lead_id", s)
		if err != nil {
			return nil, err
		}
		if leadID != nil {
			if err := requireLeadExists(ctx, c, *leadID); err != nil {
				return nil, err
			}
		}
		if !executor.SamePtr(leadID, current.LeadID) {
			set("lead_id", "lead_id", leadID)
		}
	}
	if len(sets) == 0 {
		return &updateEntityOutput{EntityID: entityID, UpdatedFields: updated, Entity: current}, nil
	}
	e, err := scanEntity(c.DB.QueryRow(ctx, `UPDATE entities SET `+strings.Join(sets, ", ")+`, updated_at = now()
		WHERE id = $1 RETURNING `+entityColumns, args...))
	if err != nil {
		return nil, err
	}
	return &updateEntityOutput{EntityID: entityID, UpdatedFields: updated, Entity: e}, nil
}

// interaction is a call, message, meeting or visit with an entity.
type interaction struct {
	InteractionID   uuid.UUID      `json:"interaction_id"`
	EntityID        uuid.UUID      `json:"entity_id"`
	InteractionType string         `json:"interaction_type"`
	Summary         string         `json:"summary"`
	Details         map[string]any `json:"details"`
	CallOutcome     *string        `json:"call_outcome"`
	ContextRef      *contextRef    `json:"context_ref"`
	OccurredAt      time.Time      `json:"occurred_at"`
	CreatedAt       time.Time      `json:"created_at"`
}

const interactionColumns = `id, entity_id, interaction_type, summary, details, call_outcome, context_type, context_id, occurred_at, created_at`

func scanInteraction(row pgx.Row) (interaction, error) {
	var i interaction
	var ctxType, ctxID *string
	err := row.Scan(&i.InteractionID, &i.EntityID, &i.InteractionType, &i.Summary, &i.Details, &i.CallOutcome, &ctxType, &ctxID,
		&i.OccurredAt, &i.CreatedAt)
	i.ContextRef = oshandlers.RefFromColumns(ctxType, ctxID)
	return i, err
}

// linkedConversation is a brain conversation an entity was discussed in.
type linkedConversation struct {
	ConversationID string     `json:"conversation_id"`
	LinkedAt       time.Time  `json:"linked_at"`
	Runs           int        `json:"runs"`
	LastRunAt      *time.Time `json:"last_run_at"`
}

// entityDetail is an entity with what is recorded about it.
type entityDetail struct {
	entity
	Interactions      []interaction        `json:"interactions"`
	InteractionsTotal int                  `json:"interactions_total"`
	Conversations     []linkedConversation `json:"conversations"`
	Sites             []entity             `json:"sites"`
}

type getEntityOutput struct {
	Entity entityDetail `json:"entity"`
}

// entityRecentInteractions is how many of an entity's interactions entity.get returns (the newest).
const entityRecentInteractions = 50

// getEntity returns an entity with its newest interactions, its site details, the conversations it was linked
// to and its sites.
func getEntity(ctx context.Context, c *executor.Call, in businesspack.GetEntityInput) (*getEntityOutput, error) {
	entityID, err := executor.RecordID("entity_id", in.EntityID)
	if err != nil {
		return nil, err
	}
	e, err := scanEntity(c.DB.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1`, entityID))
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "entity", entityID)
	}
	d := entityDetail{entity: e}
	if d.Interactions, err = executor.QueryList(ctx, c.DB, scanInteraction, `SELECT `+interactionColumns+` FROM entity_interactions
		WHERE entity_id = $1 ORDER BY occurred_at DESC, created_at DESC LIMIT $2`, entityID, entityRecentInteractions); err != nil {
		return nil, err
	}
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM entity_interactions WHERE entity_id = $1`, entityID).Scan(&d.InteractionsTotal); err != nil {
		return nil, err
	}
	if d.Conversations, err = executor.QueryList(ctx, c.DB, func(r pgx.Row) (linkedConversation, error) {
		var lc linkedConversation
		return lc, r.Scan(&lc.ConversationID, &lc.LinkedAt, &lc.Runs, &lc.LastRunAt)
	}, `SELECT ec.conversation_id, ec.created_at, count(r.id), max(r.created_at) FROM entity_conversations ec
		LEFT JOIN brain_runs r ON r.conversation_id = ec.conversation_id
		WHERE ec.entity_id = $1 GROUP BY ec.id ORDER BY ec.created_at`, entityID); err != nil {
		return nil, err
	}
	if d.Sites, err = executor.QueryList(ctx, c.DB, scanEntity, `SELECT `+entityColumns+` FROM entities WHERE parent_id = $1
		ORDER BY name, created_at`, entityID); err != nil {
		return nil, err
	}
	return &getEntityOutput{Entity: d}, nil
}

type searchEntitiesOutput struct {
	Results []entity `json:"results"`
	Count   int      `json:"count"`
}

// searchEntities finds entities whose name, email, address, suburb or postcode contains the query, or whose
// phone number contains its digits: a whole number's national digits, so "+61 499 000 111" finds "0499 000
// 111" and the other way round. Name matches rank first.
func (p *pack) searchEntities(ctx context.Context, c *executor.Call, in businesspack.SearchEntitiesInput) (*searchEntitiesOutput, error) {
	typ := strings.ToLower(strings.TrimSpace(in.EntityType))
	if typ == "customer" {
		typ = "client"
	}
	if typ != "" && typ != "site" && !slices.Contains(entityTypes, typ) {
		return nil, executor.Invalid("entity_type %q is not one of %s, site", in.EntityType, strings.Join(entityTypes, ", "))
	}
	q := strings.TrimSpace(in.Query)
	digits := strings.TrimLeft(phone.Digits(q), "0")
	if n, err := phone.Parse(q, p.region); err == nil && p.regionErr == nil {
		digits = n.National
	}
	if len(digits) < 4 {
		digits = "" // too short to mean a phone number
	}
	list, err := executor.QueryList(ctx, c.DB, scanEntity, `SELECT `+entityColumns+` FROM entities
		WHERE ($2 = '' OR kind = $2)
		  AND (name ILIKE $1 OR email ILIKE $1 OR address ILIKE $1 OR suburb ILIKE $1 OR postcode ILIKE $1
		       OR ($3 <> '' AND phone_digits LIKE '%' || $3 || '%'))
		ORDER BY CASE WHEN lower(name) = lower($4) THEN 0 WHEN name ILIKE $1 THEN 1 ELSE 2 END, name, created_at
		LIMIT $5`, executor.LikeContains(q), typ, digits, q, executor.LimitOr(in.Limit, 20))
	if err != nil {
		return nil, err
	}
	return &searchEntitiesOutput{Results: list, Count: len(list)}, nil
}

type linkEntityToConversationInput struct {
	EntityID       uuid.UUID `json:"entity_id"`
	ConversationID string    `json:"conversation_id"`
}

type entityLinked struct {
	Linked         bool      `json:"linked"`
	EntityID       uuid.UUID `json:"entity_id"`
	ConversationID string    `json:"conversation_id"`
	Created        bool      `json:"created"`
	LinkedAt       time.Time `json:"linked_at"`
}

// linkEntityToConversation records that an entity was discussed in a brain conversation. Linking again
// changes nothing.
func linkEntityToConversation(ctx context.Context, c *executor.Call, in linkEntityToConversationInput) (*entityLinked, error) {
	conv := strings.TrimSpace(in.ConversationID)
	if conv == "" || utf8.RuneCountInString(conv) > 200 {
		return nil, executor.Invalid("conversation_id must be 1 to 200 characters")
	}
	if err := requireEntityExists(ctx, c, in.EntityID); err != nil {
		return nil, err
	}
	out := &entityLinked{Linked: true, EntityID: in.EntityID, ConversationID: conv}
	// The insert's conflict check waits for a concurrent link of the same pair, so the select finds it.
	err := c.DB.QueryRow(ctx, `INSERT INTO entity_conversations (entity_id, conversation_id) VALUES ($1, $2)
		ON CONFLICT ON CONSTRAINT entity_conversations_once DO NOTHING RETURNING created_at`, in.EntityID, conv).Scan(&out.LinkedAt)
	if err == nil {
		out.Created = true
		return out, nil
	}
	if err != pgx.ErrNoRows {
		return nil, err
	}
	if err := c.DB.QueryRow(ctx, `SELECT created_at FROM entity_conversations WHERE entity_id = $1 AND conversation_id = $2`,
		in.EntityID, conv).Scan(&out.LinkedAt); err != nil {
		return nil, err
	}
	return out, nil
}

// addEntityInteractionInput is entity.add_interaction's input as the handler reads it: the details are
// stored as they were given.
type addEntityInteractionInput struct {
	businesspack.AddInteractionInput
	Details json.RawMessage `json:"details"`
}

type interactionAdded struct {
	InteractionID uuid.UUID   `json:"interaction_id"`
	Interaction   interaction `json:"interaction"`
}

// addEntityInteraction records a call, message, meeting, site visit or other contact with an entity.
func addEntityInteraction(ctx context.Context, c *executor.Call, in addEntityInteractionInput) (*interactionAdded, error) {
	entityID, err := executor.RecordID("entity_id", in.EntityID)
	if err != nil {
		return nil, err
	}
	summary := strings.TrimSpace(in.Summary)
	if summary == "" {
		return nil, executor.Invalid("summary is empty")
	}
	if err := notInFuture("occurred_at", in.OccurredAt); err != nil {
		return nil, err
	}
	details := json.RawMessage(`{}`)
	if len(in.Details) > 0 && string(in.Details) != "null" {
		details = in.Details
	}
	if err := requireEntityExists(ctx, c, entityID); err != nil {
		return nil, err
	}
	ref, err := resolveRefIfSet(ctx, c, in.ContextRef, "lead", "quote", "job", "invoice", "inspection", "message", "personal")
	if err != nil {
		return nil, err
	}
	ctxType, ctxID := ref.columns()
	i, err := scanInteraction(c.DB.QueryRow(ctx, `INSERT INTO entity_interactions (entity_id, interaction_type, summary, details,
			context_type, context_id, occurred_at)
		VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, now())) RETURNING `+interactionColumns,
		entityID, in.InteractionType, summary, details, ctxType, ctxID, in.OccurredAt))
	if err != nil {
		return nil, err
	}
	return &interactionAdded{InteractionID: i.InteractionID, Interaction: i}, nil
}

// siteDetailKinds are the keys of entity.add_address_site_details's site_details and what each holds.
// address, suburb, postcode and state go to the entity's contact; the others are kept in site_details.
var siteDetailKinds = map[string]string{
	"address": "contact", "suburb": "contact", "postcode": "contact", "state": "contact",
	"access_notes": "text", "parking": "text", "roof_type": "text", "roof_material": "text", "pets": "text",
	"on_site_contact": "text", "notes": "text",
	"storeys":            "integer 1..20",
	"roof_pitch_degrees": "number 0..90",
	"hazards":            "list of text",
}

type addEntitySiteDetailsInput struct {
	EntityID    uuid.UUID                  `json:"entity_id"`
	SiteDetails map[string]json.RawMessage `json:"site_details"`
}

type siteDetailsSaved struct {
	Saved         bool           `json:"saved"`
	EntityID      uuid.UUID      `json:"entity_id"`
	UpdatedFields []string       `json:"updated_fields"`
	Contact       entityContact  `json:"contact"`
	SiteDetails   map[string]any `json:"site_details"`
}

// addEntitySiteDetails records where an entity's site is and what a crew needs to know there. Keys given
// replace their values (null removes one); keys left out stay. Saving the same details again writes nothing.
func addEntitySiteDetails(ctx context.Context, c *executor.Call, in addEntitySiteDetailsInput) (*siteDetailsSaved, error) {
	if len(in.SiteDetails) == 0 {
		return nil, executor.Invalid("site_details is empty: give one or more of %s", strings.Join(slices.Sorted(maps.Keys(siteDetailKinds)), ", "))
	}
	contactFields := map[string]*string{}
	details := map[string]any{} // nil removes the key
	for _, k := range slices.Sorted(maps.Keys(in.SiteDetails)) {
		kind, ok := siteDetailKinds[k]
		if !ok {
			return nil, executor.Invalid("site_details.%s is not a site detail; the keys are %s", k, strings.Join(slices.Sorted(maps.Keys(siteDetailKinds)), ", "))
		}
		v, err := readSiteDetail("site_details."+k, kind, in.SiteDetails[k])
		if err != nil {
			return nil, err
		}
		if kind == "contact" {
			s, _ := v.(*string)
			contactFields[k] = s
			continue
		}
		details[k] = v
	}
	current, err := scanEntity(c.DB.QueryRow(ctx, `SELECT `+entityColumns+` FROM entities WHERE id = $1 FOR UPDATE`, in.EntityID))
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "entity", in.EntityID)
	}
	out := &siteDetailsSaved{Saved: true, EntityID: in.EntityID, UpdatedFields: []string{}, Contact: current.Contact,
		SiteDetails: current.SiteDetails}
	var sets []string
	args := []any{in.EntityID}
	for _, k := range slices.Sorted(maps.Keys(contactFields)) {
		if v := contactFields[k]; !executor.SamePtr(v, *current.Contact.field(k)) {
			*out.Contact.field(k) = v
			out.UpdatedFields = append(out.UpdatedFields, k)
			args = append(args, v)
			sets = append(sets, fmt.Sprintf("%s = $%d", k, len(args))) // k is a key of siteDetailKinds
		}
	}
	merged := map[string]any{}
	for k, v := range current.SiteDetails {
		merged[k] = v
	}
	changedDetails := false
	for _, k := range slices.Sorted(maps.Keys(details)) {
		v := details[k]
		was, had := current.SiteDetails[k]
		if v == nil {
			if had {
				delete(merged, k)
				out.UpdatedFields = append(out.UpdatedFields, k)
				changedDetails = true
			}
			continue
		}
		if !had || !sameJSON(was, v) {
			merged[k] = v
			out.UpdatedFields = append(out.UpdatedFields, k)
			changedDetails = true
		}
	}
	if changedDetails {
		args = append(args, merged)
		sets = append(sets, fmt.Sprintf("site_details = $%d", len(args)))
	}
	if len(sets) == 0 {
		return out, nil
	}
	e, err := scanEntity(c.DB.QueryRow(ctx, `UPDATE entities SET `+strings.Join(sets, ", ")+`, updated_at = now()
		WHERE id = $1 RETURNING `+entityColumns, args...))
	if err != nil {
		return nil, err
	}
	sort.Strings(out.UpdatedFields)
	out.Contact, out.SiteDetails = e.Contact, e.SiteDetails
	return out, nil
}

// readSiteDetail reads one site detail of a kind of siteDetailKinds; null (or blank text, or an empty list)
// is nil: the detail is removed.
func readSiteDetail(field, kind string, raw json.RawMessage) (any, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	switch kind {
	case "contact", "text":
		s, err := readPatchText(field, raw)
		if s == nil || err != nil {
			return nil, err
		}
		if kind == "text" {
			return *s, nil
		}
		return s, nil
	case "integer 1..20":
		var n float64
		if err := json.Unmarshal(raw, &n); err != nil || n != math.Trunc(n) || n < 1 || n > 20 {
			return nil, executor.Invalid("%s must be a whole number from 1 to 20", field)
		}
		return int(n), nil
	case "number 0..90":
		var n float64
		if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > 90 {
			return nil, executor.Invalid("%s must be a number of degrees from 0 to 90", field)
		}
		return n, nil
	default: // list of text
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, executor.Invalid("%s must be a list of text", field)
		}
		clean := []string{}
		for _, s := range list {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(clean, s) {
				clean = append(clean, s)
			}
		}
		if len(clean) == 0 {
			return nil, nil
		}
		return clean, nil
	}
}

// sameJSON reports whether two values are the same once written as JSON (a stored 2 and a given 2.0 are).
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	_ = json.Unmarshal(x, &u)
	_ = json.Unmarshal(y, &v)
	xs, _ := json.Marshal(u)
	ys, _ := json.Marshal(v)
	return string(xs) == string(ys)
}
