package integrationshandlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// highLevelRequiredEnv are what every HighLevel tool needs.
var highLevelRequiredEnv = []string{integrationspack.EnvHighLevelToken, integrationspack.EnvHighLevelLocationID}

// highLevelClient calls LeadConnector API v2 (services.leadconnectorhq.com): Authorization: Bearer with a
// Private Integration or OAuth token of the location, and the Version header.
type highLevelClient struct {
	cfg    integrationspack.HighLevelConfig
	client *http.Client
}

func (h *highLevelClient) configured() bool { return h.cfg.Token != "" && h.cfg.LocationID != "" }

func (h *highLevelClient) call(ctx context.Context, method, path string, body, out any) error {
	return do(ctx, h.client, apiRequest{
		provider: "HighLevel", method: method, url: h.cfg.BaseURL + path, body: body,
		header:       http.Header{"Authorization": {"Bearer " + h.cfg.Token}, "Version": {h.cfg.APIVersion}},
		errorMessage: highLevelErrorMessage,
	}, out)
}

// highLevelErrorMessage reads LeadConnector's error body: {"statusCode": 422, "message": "..." or
// ["...", "..."], "error": "Unprocessable Entity"}.
func highLevelErrorMessage(raw []byte) string {
	var body struct {
		Message json.RawMessage `json:"message"`
		Error   string          `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	var one string
	var many []string
	switch {
	case json.Unmarshal(body.Message, &one) == nil && one != "":
		return one
	case json.Unmarshal(body.Message, &many) == nil && len(many) > 0:
		return strings.Join(many, "; ")
	}
	return body.Error
}

// hlLocation is the part of a location (sub-account) GEM reads.
type hlLocation struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Timezone string `json:"timezone"`
}

// getLocation reads the location: GET /locations/{locationId}.
func (h *highLevelClient) getLocation(ctx context.Context) (hlLocation, error) {
	var resp struct {
		Location hlLocation `json:"location"`
	}
	err := h.call(ctx, http.MethodGet, "/locations/"+url.PathEscape(h.cfg.LocationID), nil, &resp)
	return resp.Location, err
}

// hlContact is the part of a contact GEM reads.
type hlContact struct {
	ID          string `json:"id"`
	ContactName string `json:"contactName"`
	FirstName   string `json:"firstName"`
	LastName    string `json:"lastName"`
	CompanyName string `json:"companyName"`
	Email       string `json:"email"`
	Phone       string `json:"phone"`
	Address1    string `json:"address1"`
	City        string `json:"city"`
	State       string `json:"state"`
	PostalCode  string `json:"postalCode"`
	Source      string `json:"source"`
	DateAdded   string `json:"dateAdded"`
	DateUpdated string `json:"dateUpdated"`
}

// name is the contact's name as people would say it.
func (c hlContact) name() string {
	if n := strings.TrimSpace(c.ContactName); n != "" {
		return n
	}
	if n := strings.TrimSpace(strings.TrimSpace(c.FirstName) + " " + strings.TrimSpace(c.LastName)); n != "" {
		return n
	}
	for _, n := range []string{c.CompanyName, c.Email, c.Phone} {
		if n = strings.TrimSpace(n); n != "" {
			return n
		}
	}
	return "HighLevel contact " + c.ID
}

// hlContactSearch is POST /contacts/search's body: a page of a location's contacts, optionally only those
// updated since a time, oldest update first.
type hlContactSearch struct {
	LocationID string           `json:"locationId"`
	Page       int              `json:"page"`
	PageLimit  int              `json:"pageLimit"`
	Filters    []map[string]any `json:"filters,omitempty"`
	Sort       []map[string]any `json:"sort,omitempty"`
}

// searchContacts reads one page of contacts: POST /contacts/search.
func (h *highLevelClient) searchContacts(ctx context.Context, req hlContactSearch) (contacts []hlContact, total int, err error) {
	var resp struct {
		Contacts []hlContact `json:"contacts"`
		Total    int         `json:"total"`
	}
	err = h.call(ctx, http.MethodPost, "/contacts/search", req, &resp)
	return resp.Contacts, resp.Total, err
}

// createNote adds a note to a contact: POST /contacts/{contactId}/notes.
func (h *highLevelClient) createNote(ctx context.Context, contactID, body string) (string, error) {
	var resp struct {
		Note struct {
			ID string `json:"id"`
		} `json:"note"`
	}
	err := h.call(ctx, http.MethodPost, "/contacts/"+url.PathEscape(contactID)+"/notes", map[string]string{"body": body}, &resp)
	return resp.Note.ID, err
}

// hlTask is POST /contacts/{contactId}/tasks's body.
type hlTask struct {
	Title     string `json:"title"`
	Body      string `json:"body,omitempty"`
	DueDate   string `json:"dueDate"`
	Completed bool   `json:"completed"`
}

// createTask adds a task to a contact: POST /contacts/{contactId}/tasks.
func (h *highLevelClient) createTask(ctx context.Context, contactID string, t hlTask) (string, error) {
	var resp struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	err := h.call(ctx, http.MethodPost, "/contacts/"+url.PathEscape(contactID)+"/tasks", t, &resp)
	return resp.Task.ID, err
}

// hlStageMove puts a contact's opportunity in a pipeline at a stage.
type hlStageMove struct {
	ContactID     string   `json:"contact_id"`
	PipelineID    string   `json:"pipeline_id"`
	StageID       string   `json:"stage_id"`
	Stage         string   `json:"stage"`
	Status        string   `json:"status"`
	Name          string   `json:"name"`
	MonetaryValue *float64 `json:"monetary_value,omitempty"`
}

// opportunityStatus is the opportunity status that goes with a GEM stage.
func opportunityStatus(stage string) string {
	switch stage {
	case "won":
		return "won"
	case "lost":
		return "lost"
	}
	return "open"
}

// moveStage finds the contact's opportunity in the pipeline (GET /opportunities/search) and moves it
// (PUT /opportunities/{id}), or creates one at the stage (POST /opportunities/). It returns the
// opportunity's id.
func (h *highLevelClient) moveStage(ctx context.Context, m hlStageMove) (string, error) {
	q := url.Values{"location_id": {h.cfg.LocationID}, "pipeline_id": {m.PipelineID}, "contact_id": {m.ContactID}}
	var found struct {
		Opportunities []struct {
			ID string `json:"id"`
		} `json:"opportunities"`
	}
	if err := h.call(ctx, http.MethodGet, "/opportunities/search?"+q.Encode(), nil, &found); err != nil {
		return "", err
	}
	var resp struct {
		Opportunity struct {
			ID string `json:"id"`
		} `json:"opportunity"`
	}
	if len(found.Opportunities) > 0 {
		id := found.Opportunities[0].ID
		body := map[string]any{"pipelineId": m.PipelineID, "pipelineStageId": m.StageID, "status": m.Status}
		if m.MonetaryValue != nil {
			body["monetaryValue"] = *m.MonetaryValue
		}
		if err := h.call(ctx, http.MethodPut, "/opportunities/"+url.PathEscape(id), body, &resp); err != nil {
			return "", err
		}
		if resp.Opportunity.ID == "" {
			resp.Opportunity.ID = id
		}
		return resp.Opportunity.ID, nil
	}
	body := map[string]any{"pipelineId": m.PipelineID, "locationId": h.cfg.LocationID, "name": m.Name,
		"pipelineStageId": m.StageID, "status": m.Status, "contactId": m.ContactID}
	if m.MonetaryValue != nil {
		body["monetaryValue"] = *m.MonetaryValue
	}
	if err := h.call(ctx, http.MethodPost, "/opportunities/", body, &resp); err != nil {
		return "", err
	}
	return resp.Opportunity.ID, nil
}
