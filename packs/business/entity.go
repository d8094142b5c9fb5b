package businesspack

import "time"

// The entity tools: clients, suppliers, partners, friends and the other people and businesses GEM knows.
const (
	CreateEntity           = "entity.create"
	UpdateEntity           = "entity.update"
	SearchEntities         = "entity.search"
	GetEntity              = "entity.get"
	LinkEntityConversation = "entity.link_to_conversation"
	AddInteraction         = "entity.add_interaction"
	AddAddressSiteDetails  = "entity.add_address_site_details"
)

// What an entity is to the business (entity.create's entity_type).
const (
	EntityClient   = "client"
	EntitySupplier = "supplier"
	EntityPartner  = "partner"
	EntityFriend   = "friend"
	EntityLead     = "lead"
	EntityOther    = "other"
)

// Channels of an interaction (entity.add_interaction's interaction_type).
const (
	InteractionCall      = "call"
	InteractionSMS       = "sms"
	InteractionEmail     = "email"
	InteractionMeeting   = "meeting"
	InteractionSiteVisit = "site_visit"
	InteractionOther     = "other"
)

// Contact is how to reach an entity and where it is: the details known, and no others.
type Contact struct {
	Phone    string `json:"phone,omitempty"`
	Email    string `json:"email,omitempty"`
	Address  string `json:"address,omitempty"`
	Suburb   string `json:"suburb,omitempty"`
	Postcode string `json:"postcode,omitempty"`
	State    string `json:"state,omitempty"`
}

// CreateEntityInput is entity.create's input.
type CreateEntityInput struct {
	EntityType string   `json:"entity_type"`
	Name       string   `json:"name"`
	Contact    *Contact `json:"contact,omitempty"`
	Notes      string   `json:"notes,omitempty"`
	LeadID     string   `json:"lead_id,omitempty"`
}

// SearchEntitiesInput is entity.search's input.
type SearchEntitiesInput struct {
	Query      string `json:"query"`
	EntityType string `json:"entity_type,omitempty"`
	Limit      int    `json:"limit,omitempty"`
}

// GetEntityInput is entity.get's input.
type GetEntityInput struct {
	EntityID string `json:"entity_id,omitempty"`
}

// AddInteractionInput is entity.add_interaction's input.
type AddInteractionInput struct {
	EntityID        string `json:"entity_id,omitempty"`
	InteractionType string `json:"interaction_type"`
	Summary         string `json:"summary"`
	// Details are structured extras kept with it, as the caller names them.
	Details    map[string]any `json:"details,omitempty"`
	OccurredAt *time.Time     `json:"occurred_at,omitempty"`
	ContextRef *Ref           `json:"context_ref,omitempty"`
}

// EntityTools are the entity tools, in the registry's order.
var EntityTools = []string{CreateEntity, UpdateEntity, SearchEntities, GetEntity, LinkEntityConversation, AddInteraction, AddAddressSiteDetails}

// EntityPatch is what entity.update changes: the fields it sets, and no others.
type EntityPatch struct {
	Name    string   `json:"name,omitempty"`
	Contact *Contact `json:"contact,omitempty"`
}

// UpdateEntityInput is entity.update's input.
type UpdateEntityInput struct {
	EntityID string      `json:"entity_id,omitempty"`
	Patch    EntityPatch `json:"patch"`
}
