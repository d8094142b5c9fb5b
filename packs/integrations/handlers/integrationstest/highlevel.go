package integrationstest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// HighLevelVersion is the Version header the fake insists on, as LeadConnector's v2 endpoints do.
const HighLevelVersion = "2021-07-28"

// HighLevelContact is a contact as LeadConnector returns it.
type HighLevelContact struct {
	ID          string   `json:"id"`
	LocationID  string   `json:"locationId"`
	ContactName string   `json:"contactName,omitempty"`
	FirstName   string   `json:"firstName,omitempty"`
	LastName    string   `json:"lastName,omitempty"`
	Email       string   `json:"email,omitempty"`
	Phone       string   `json:"phone,omitempty"`
	Address1    string   `json:"address1,omitempty"`
	City        string   `json:"city,omitempty"`
	PostalCode  string   `json:"postalCode,omitempty"`
	Source      string   `json:"source,omitempty"`
	Tags        []string `json:"tags"`
	DateAdded   string   `json:"dateAdded"`
	DateUpdated string   `json:"dateUpdated"`
}

// HighLevelNote is a note the fake accepted.
type HighLevelNote struct {
	ID        string `json:"id"`
	ContactID string `json:"contactId"`
	Body      string `json:"body"`
	DateAdded string `json:"dateAdded"`
}

// HighLevelTask is a task the fake accepted.
type HighLevelTask struct {
	ID        string `json:"id"`
	ContactID string `json:"contactId"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	DueDate   string `json:"dueDate"`
	Completed bool   `json:"completed"`
}

// HighLevelOpportunity is an opportunity in the fake.
type HighLevelOpportunity struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	PipelineID      string   `json:"pipelineId"`
	PipelineStageID string   `json:"pipelineStageId"`
	Status          string   `json:"status"`
	ContactID       string   `json:"contactId"`
	LocationID      string   `json:"locationId"`
	MonetaryValue   *float64 `json:"monetaryValue,omitempty"`
	UpdatedAt       string   `json:"updatedAt"`
}

// HighLevelStages are the fake pipeline's stages, by GEM stage.
var HighLevelStages = map[string]string{
	"new": "stage-new", "contacted": "stage-contacted", "inspection_scheduled": "stage-booked",
	"inspected": "stage-inspected", "quoted": "stage-quoted", "won": "stage-won", "lost": "stage-lost",
}

// HighLevel is a fake of LeadConnector API v2 for one location with one pipeline.
type HighLevel struct {
	*httptest.Server
	Token, LocationID, PipelineID string

	faults
	mu            sync.Mutex
	contacts      []HighLevelContact
	notes         []HighLevelNote
	tasks         []HighLevelTask
	opportunities []HighLevelOpportunity
	requests      []string
}

// NewHighLevel starts a fake with fresh credentials.
func NewHighLevel() *HighLevel {
	h := &HighLevel{Token: "pit-" + randomID(12), LocationID: "loc" + randomID(8), PipelineID: "pipe" + randomID(6)}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

// Config is the integrations pack's HighLevel configuration for this fake, with the pipeline mapped.
func (h *HighLevel) Config() integrationspack.HighLevelConfig {
	stages := map[string]string{}
	for k, v := range HighLevelStages {
		stages[k] = v
	}
	return integrationspack.HighLevelConfig{Token: h.Token, LocationID: h.LocationID, BaseURL: h.URL, PipelineID: h.PipelineID, StageIDs: stages}
}

// AddContact puts a contact in the location (its location and dates are filled in when empty).
func (h *HighLevel) AddContact(c HighLevelContact) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.LocationID == "" {
		c.LocationID = h.LocationID
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if c.DateAdded == "" {
		c.DateAdded = now
	}
	if c.DateUpdated == "" {
		c.DateUpdated = now
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	for i := range h.contacts {
		if h.contacts[i].ID == c.ID {
			h.contacts[i] = c
			return
		}
	}
	h.contacts = append(h.contacts, c)
}

// Notes returns the notes accepted, in order.
func (h *HighLevel) Notes() []HighLevelNote {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HighLevelNote(nil), h.notes...)
}

// Tasks returns the tasks accepted, in order.
func (h *HighLevel) Tasks() []HighLevelTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HighLevelTask(nil), h.tasks...)
}

// Opportunities returns the opportunities, in order of creation.
func (h *HighLevel) Opportunities() []HighLevelOpportunity {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HighLevelOpportunity(nil), h.opportunities...)
}

// Requests returns "METHOD path" of every request that reached the fake, in order.
func (h *HighLevel) Requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.requests...)
}

// Fail answers the next n requests with the method (empty for any) and a path starting with prefix with
// status and LeadConnector's error body.
func (h *HighLevel) Fail(method, prefix string, n, status int, message string) {
	body, _ := json.Marshal(map[string]any{"statusCode": status, "message": message, "error": http.StatusText(status)})
	h.add(method, prefix, n, status, string(body), nil)
}

func (h *HighLevel) fail(w http.ResponseWriter, status int, message any) {
	writeJSON(w, status, map[string]any{"statusCode": status, "message": message, "error": http.StatusText(status)})
}

func (h *HighLevel) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, r.Method+" "+r.URL.Path)
	h.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+h.Token {
		h.fail(w, http.StatusUnauthorized, "Invalid JWT")
		return
	}
	if r.Header.Get("Version") != HighLevelVersion {
		h.fail(w, http.StatusBadRequest, "Version header was not found")
		return
	}
	if h.faults.serve(w, r) {
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "locations":
		if parts[1] != h.LocationID {
			h.fail(w, http.StatusForbidden, "The token does not have access to this location")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"location": map[string]any{"id": h.LocationID, "name": "Fake Roofing Co",
			"timezone": "Australia/Sydney", "companyId": "company1"}})
	case r.Method == http.MethodPost && path == "/contacts/search":
		h.searchContacts(w, r)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "contacts" && parts[2] == "notes":
		h.createNote(w, r, parts[1])
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "contacts" && parts[2] == "tasks":
		h.createTask(w, r, parts[1])
	case r.Method == http.MethodGet && path == "/opportunities/pipelines":
		if r.URL.Query().Get("locationId") != h.LocationID {
			h.fail(w, http.StatusForbidden, "The token does not have access to this location")
			return
		}
		var stages []map[string]any
		for i, s := range []string{"new", "contacted", "inspection_scheduled", "inspected", "quoted", "won", "lost"} {
			stages = append(stages, map[string]any{"id": HighLevelStages[s], "name": s, "position": i})
		}
		writeJSON(w, http.StatusOK, map[string]any{"pipelines": []any{map[string]any{"id": h.PipelineID, "name": "Roofing", "stages": stages}}})
	case r.Method == http.MethodGet && path == "/opportunities/search":
		h.searchOpportunities(w, r)
	case r.Method == http.MethodPost && path == "/opportunities":
		h.saveOpportunity(w, r, "")
	case r.Method == http.MethodPut && len(parts) == 2 && parts[0] == "opportunities":
		h.saveOpportunity(w, r, parts[1])
	default:
		h.fail(w, http.StatusNotFound, "Cannot "+r.Method+" "+r.URL.Path)
	}
}

func (h *HighLevel) contactExists(id string) bool {
	for _, c := range h.contacts {
		if c.ID == id {
			return true
		}
	}
	return false
}

func (h *HighLevel) searchContacts(w http.ResponseWriter, r *http.Request) {
	var req struct {
		LocationID string `json:"locationId"`
		Page       int    `json:"page"`
		PageLimit  int    `json:"pageLimit"`
		Filters    []struct {
			Field    string            `json:"field"`
			Operator string            `json:"operator"`
			Value    map[string]string `json:"value"`
		} `json:"filters"`
		Sort []struct {
			Field     string `json:"field"`
			Direction string `json:"direction"`
		} `json:"sort"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		h.fail(w, http.StatusBadRequest, "the body is not JSON")
		return
	}
	switch {
	case req.LocationID != h.LocationID:
		h.fail(w, http.StatusForbidden, "The token does not have access to this location")
		return
	case req.PageLimit < 1 || req.PageLimit > 500:
		h.fail(w, http.StatusUnprocessableEntity, []string{"pageLimit must be between 1 and 500"})
		return
	}
	page := max(req.Page, 1)
	h.mu.Lock()
	var list []HighLevelContact
	for _, c := range h.contacts {
		keep := true
		for _, f := range req.Filters {
			if f.Field == "dateUpdated" && f.Operator == "range" && f.Value["gte"] != "" {
				since, err1 := time.Parse(time.RFC3339Nano, f.Value["gte"])
				updated, err2 := time.Parse(time.RFC3339Nano, c.DateUpdated)
				keep = keep && err1 == nil && err2 == nil && !updated.Before(since)
			}
		}
		if keep {
			list = append(list, c)
		}
	}
	h.mu.Unlock()
	sort.SliceStable(list, func(i, j int) bool { return list[i].DateUpdated < list[j].DateUpdated })
	total := len(list)
	start := min((page-1)*req.PageLimit, total)
	end := min(start+req.PageLimit, total)
	writeJSON(w, http.StatusOK, map[string]any{"contacts": append([]HighLevelContact{}, list[start:end]...), "total": total})
}

func (h *HighLevel) createNote(w http.ResponseWriter, r *http.Request, contactID string) {
	var req struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Body) == "" {
		h.fail(w, http.StatusUnprocessableEntity, []string{"body must be a string", "body should not be empty"})
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.contactExists(contactID) {
		h.fail(w, http.StatusBadRequest, "Contact not found")
		return
	}
	n := HighLevelNote{ID: "note" + randomID(6), ContactID: contactID, Body: req.Body, DateAdded: time.Now().UTC().Format(time.RFC3339Nano)}
	h.notes = append(h.notes, n)
	writeJSON(w, http.StatusCreated, map[string]any{"note": n})
}

func (h *HighLevel) createTask(w http.ResponseWriter, r *http.Request, contactID string) {
	var req struct {
		Title     string `json:"title"`
		Body      string `json:"body"`
		DueDate   string `json:"dueDate"`
		Completed *bool  `json:"completed"`
	}
	err := json.NewDecoder(r.Body).Decode(&req)
	_, dueErr := time.Parse(time.RFC3339Nano, req.DueDate)
	if err != nil || req.Title == "" || dueErr != nil || req.Completed == nil {
		h.fail(w, http.StatusUnprocessableEntity, []string{"title should not be empty", "dueDate must be a valid ISO 8601 date string", "completed must be a boolean value"})
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.contactExists(contactID) {
		h.fail(w, http.StatusBadRequest, "Contact not found")
		return
	}
	t := HighLevelTask{ID: "task" + randomID(6), ContactID: contactID, Title: req.Title, Body: req.Body, DueDate: req.DueDate, Completed: *req.Completed}
	h.tasks = append(h.tasks, t)
	writeJSON(w, http.StatusCreated, map[string]any{"task": t})
}

func (h *HighLevel) searchOpportunities(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("location_id") != h.LocationID {
		h.fail(w, http.StatusForbidden, "The token does not have access to this location")
		return
	}
	h.mu.Lock()
	list := []HighLevelOpportunity{}
	for _, o := range h.opportunities {
		if (q.Get("pipeline_id") == "" || o.PipelineID == q.Get("pipeline_id")) && (q.Get("contact_id") == "" || o.ContactID == q.Get("contact_id")) {
			list = append(list, o)
		}
	}
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"opportunities": list, "meta": map[string]any{"total": len(list), "currentPage": 1}})
}

func (h *HighLevel) saveOpportunity(w http.ResponseWriter, r *http.Request, id string) {
	var req struct {
		PipelineID      string   `json:"pipelineId"`
		LocationID      string   `json:"locationId"`
		Name            string   `json:"name"`
		PipelineStageID string   `json:"pipelineStageId"`
		Status          string   `json:"status"`
		ContactID       string   `json:"contactId"`
		MonetaryValue   *float64 `json:"monetaryValue"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		h.fail(w, http.StatusBadRequest, "the body is not JSON")
		return
	}
	validStage := false
	for _, s := range HighLevelStages {
		validStage = validStage || s == req.PipelineStageID
	}
	switch {
	case req.PipelineID != "" && req.PipelineID != h.PipelineID:
		h.fail(w, http.StatusBadRequest, "Pipeline not found")
		return
	case req.PipelineStageID != "" && !validStage:
		h.fail(w, http.StatusBadRequest, "Pipeline stage not found")
		return
	case req.Status != "" && req.Status != "open" && req.Status != "won" && req.Status != "lost" && req.Status != "abandoned":
		h.fail(w, http.StatusUnprocessableEntity, []string{"status must be one of the following values: open, won, lost, abandoned"})
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	if id == "" {
		if req.LocationID != h.LocationID {
			h.fail(w, http.StatusForbidden, "The token does not have access to this location")
			return
		}
		if req.Name == "" || req.PipelineID == "" || req.Status == "" || !h.contactExists(req.ContactID) {
			h.fail(w, http.StatusUnprocessableEntity, []string{"name, pipelineId, status and an existing contactId are required"})
			return
		}
		o := HighLevelOpportunity{ID: "opp" + randomID(6), Name: req.Name, PipelineID: req.PipelineID, PipelineStageID: req.PipelineStageID,
			Status: req.Status, ContactID: req.ContactID, LocationID: h.LocationID, MonetaryValue: req.MonetaryValue, UpdatedAt: now}
		h.opportunities = append(h.opportunities, o)
		writeJSON(w, http.StatusCreated, map[string]any{"opportunity": o})
		return
	}
	for i := range h.opportunities {
		o := &h.opportunities[i]
		if o.ID != id {
			continue
		}
		if req.PipelineStageID != "" {
			o.PipelineStageID = req.PipelineStageID
		}
		if req.Status != "" {
			o.Status = req.Status
		}
		if req.MonetaryValue != nil {
			o.MonetaryValue = req.MonetaryValue
		}
		o.UpdatedAt = now
		writeJSON(w, http.StatusOK, map[string]any{"opportunity": *o})
		return
	}
	h.fail(w, http.StatusNotFound, "Opportunity not found")
}
