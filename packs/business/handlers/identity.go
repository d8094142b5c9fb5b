package businesshandlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func registerIdentity(h executor.Handlers) {
	h.Func(businesspack.GetSelfModel, executor.Typed(getSelfModel))
	h.Func(businesspack.UpdateSelfModel, executor.Typed(updateSelfModel))
	h.Func(businesspack.SetBoundaries, executor.Typed(setBoundaries))
	h.Func(businesspack.AddMemory, executor.Typed(addMemory))
	h.Func(businesspack.ExpireMemory, executor.Typed(expireMemory))
	h.Func(businesspack.ListMemories, executor.Typed(listMemories))
	h.Func(businesspack.ScorePattern, executor.Typed(scorePattern))
}

// selfModelSections are the four parts of the self-model, each a JSON object.
var selfModelSections = []string{"persona", "values", "boundaries", "goals"}

// memoryTypes are the kinds of identity memory.
var memoryTypes = []string{"preference", "fact", "boundary", "commitment", "pattern"}

// Self-model.

type selfModel struct {
	Persona    json.RawMessage `json:"persona"`
	Values     json.RawMessage `json:"values"`
	Boundaries json.RawMessage `json:"boundaries"`
	Goals      json.RawMessage `json:"goals"`
	UpdatedAt  *time.Time      `json:"updated_at"`
}

func (m *selfModel) section(name string) *json.RawMessage {
	switch name {
	case "persona":
		return &m.Persona
	case "values":
		return &m.Values
	case "boundaries":
		return &m.Boundaries
	default:
		return &m.Goals
	}
}

// readSelfModel reads the self-model (empty objects before anything is set); lock holds it for the call.
func readSelfModel(ctx context.Context, db executor.DB, lock bool) (selfModel, bool, error) {
	m := selfModel{Persona: json.RawMessage("{}"), Values: json.RawMessage("{}"), Boundaries: json.RawMessage("{}"), Goals: json.RawMessage("{}")}
	sql := `SELECT persona, "values", boundaries, goals, updated_at FROM identity_self_model WHERE singleton`
	if lock {
		sql += ` FOR UPDATE`
	}
	var updated time.Time
	err := db.QueryRow(ctx, sql).Scan(&m.Persona, &m.Values, &m.Boundaries, &m.Goals, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("error reading the self-model: %w", err)
	}
	m.UpdatedAt = &updated
	return m, true, nil
}

func getSelfModel(ctx context.Context, c *executor.Call, _ struct{}) (*selfModel, error) {
	m, _, err := readSelfModel(ctx, c.DB, false)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

type updateSelfModelInput struct {
	Patch  map[string]json.RawMessage `json:"patch"`
	Reason *string                    `json:"reason"`
}

type selfModelChange struct {
	UpdatedAt       time.Time `json:"updated_at"`
	Changed         bool      `json:"changed"`
	ChangedSections []string  `json:"changed_sections"`
	SelfModel       selfModel `json:"self_model"`
}

// updateSelfModel merges a patch into the self-model: each top-level key names a section and holds an object
// merged into it the JSON merge patch way (RFC 7396: a key set to null is removed, objects merge, anything
// else replaces). A patch that changes nothing writes nothing.
func updateSelfModel(ctx context.Context, c *executor.Call, in updateSelfModelInput) (*selfModelChange, error) {
	if len(in.Patch) == 0 {
		return nil, executor.InvalidField("patch", "is empty: give one or more of %s, each an object", strings.Join(selfModelSections, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(in.Patch)) {
		if !slices.Contains(selfModelSections, k) {
			return nil, executor.InvalidField("patch."+k, "is not a section of the self-model (%s)", strings.Join(selfModelSections, ", "))
		}
		if !isJSONObject(in.Patch[k]) {
			return nil, executor.InvalidField("patch."+k, "must be an object (the changes to merge into the %s section)", k)
		}
	}
	return changeSelfModel(ctx, c, in.Patch, in.Reason, func(current, patch json.RawMessage) (json.RawMessage, error) {
		return mergePatch(current, patch)
	})
}

type setBoundariesInput struct {
	Boundaries json.RawMessage `json:"boundaries"`
	Reason     *string         `json:"reason"`
}

// setBoundaries replaces the self-model's boundaries section (the rules the system must keep to) with the
// object given. Setting the same boundaries again writes nothing.
func setBoundaries(ctx context.Context, c *executor.Call, in setBoundariesInput) (*selfModelChange, error) {
	return changeSelfModel(ctx, c, map[string]json.RawMessage{"boundaries": in.Boundaries}, in.Reason,
		func(_, replacement json.RawMessage) (json.RawMessage, error) { return replacement, nil })
}

// changeSelfModel applies change to each section the patch names, then writes the model and a change row if
// any section changed (compared as jsonb, so key order and number spelling do not count).
func changeSelfModel(ctx context.Context, c *executor.Call, patch map[string]json.RawMessage, reason *string,
	change func(current, patch json.RawMessage) (json.RawMessage, error)) (*selfModelChange, error) {
	m, exists, err := readSelfModel(ctx, c.DB, true)
	if err != nil {
		return nil, err
	}
	next := m
	for k, v := range patch {
		merged, err := change(*m.section(k), v)
		if err != nil {
			return nil, executor.InvalidField("patch."+k, "cannot be merged: %v", err)
		}
		*next.section(k) = merged
	}
	var changed []string
	if err := c.DB.QueryRow(ctx, `SELECT array_remove(ARRAY[
			CASE WHEN $1::jsonb IS DISTINCT FROM $5::jsonb THEN 'persona' END,
			CASE WHEN $2::jsonb IS DISTINCT FROM $6::jsonb THEN 'values' END,
			CASE WHEN $3::jsonb IS DISTINCT FROM $7::jsonb THEN 'boundaries' END,
			CASE WHEN $4::jsonb IS DISTINCT FROM $8::jsonb THEN 'goals' END], NULL)`,
		m.Persona, m.Values, m.Boundaries, m.Goals, next.Persona, next.Values, next.Boundaries, next.Goals).Scan(&changed); err != nil {
		return nil, fmt.Errorf("error comparing the self-model: %w", err)
	}
	if len(changed) == 0 && exists {
		return &selfModelChange{UpdatedAt: *m.UpdatedAt, ChangedSections: []string{}, SelfModel: m}, nil
	}
	var updated time.Time
	err = c.DB.QueryRow(ctx, `INSERT INTO identity_self_model (persona, "values", boundaries, goals) VALUES ($1, $2, $3, $4)
		ON CONFLICT (singleton) DO UPDATE SET persona = EXCLUDED.persona, "values" = EXCLUDED."values",
			boundaries = EXCLUDED.boundaries, goals = EXCLUDED.goals, updated_at = now()
		RETURNING updated_at, persona, "values", boundaries, goals`, next.Persona, next.Values, next.Boundaries, next.Goals).
		Scan(&updated, &next.Persona, &next.Values, &next.Boundaries, &next.Goals)
	if err != nil {
		return nil, fmt.Errorf("error writing the self-model: %w", err)
	}
	next.UpdatedAt = &updated
	patchJSON, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	if _, err := c.DB.Exec(ctx, `INSERT INTO identity_self_model_changes (tool_name, sections, patch, reason) VALUES ($1, $2, $3, $4)`,
		c.Tool.Name, changed, patchJSON, reason); err != nil {
		return nil, fmt.Errorf("error recording the self-model change: %w", err)
	}
	return &selfModelChange{UpdatedAt: updated, Changed: len(changed) > 0, ChangedSections: changed, SelfModel: next}, nil
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// mergePatch applies a JSON merge patch (RFC 7396) to a JSON object.
func mergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	var t, p any
	if err := decodeJSON(target, &t); err != nil {
		return nil, err
	}
	if err := decodeJSON(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(t, p))
}

func mergeValue(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergeValue(t[k], v)
	}
	return t
}

func decodeJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// Memories.

type identityMemory struct {
	MemoryID     uuid.UUID       `json:"memory_id"`
	MemoryType   string          `json:"memory_type"`
	Key          string          `json:"key"`
	Value        json.RawMessage `json:"value"`
	Confidence   float64         `json:"confidence"`
	Source       string          `json:"source"`
	EvidenceRefs json.RawMessage `json:"evidence_refs"`
	Observations int             `json:"observations"`
	ValidFrom    time.Time       `json:"valid_from"`
	ValidTo      *time.Time      `json:"valid_to"`
	Current      bool            `json:"current"`
	EndReason    *string         `json:"end_reason"`
	Supersedes   *uuid.UUID      `json:"supersedes"`
	SupersededBy *uuid.UUID      `json:"superseded_by"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

const memoryColumnsM = `m.id, m.memory_type, m.key, m.value, m.confidence, m.source, m.evidence_refs, m.observations,
	m.valid_from, m.valid_to, m.end_reason, m.supersedes,
	(SELECT n.id FROM identity_memories n WHERE n.supersedes = m.id ORDER BY n.valid_from DESC LIMIT 1),
	m.created_at, m.updated_at`

func scanIdentityMemory(row pgx.Row) (identityMemory, error) {
	var m identityMemory
	err := row.Scan(&m.MemoryID, &m.MemoryType, &m.Key, &m.Value, &m.Confidence, &m.Source, &m.EvidenceRefs, &m.Observations,
		&m.ValidFrom, &m.ValidTo, &m.EndReason, &m.Supersedes, &m.SupersededBy, &m.CreatedAt, &m.UpdatedAt)
	m.Current = m.ValidTo == nil
	return m, err
}

func memoryByID(ctx context.Context, db executor.DB, id uuid.UUID) (identityMemory, error) {
	m, err := scanIdentityMemory(db.QueryRow(ctx, `SELECT `+memoryColumnsM+` FROM identity_memories m WHERE m.id = $1`, id))
	return m, executor.NotFoundIfNoRows(err, "memory", id)
}

// currentMemory locks and returns the current memory of a key, or nil.
func currentMemory(ctx context.Context, db executor.DB, key string) (*identityMemory, error) {
	m, err := scanIdentityMemory(db.QueryRow(ctx, `SELECT `+memoryColumnsM+` FROM identity_memories m
		WHERE m.key = $1 AND m.valid_to IS NULL FOR UPDATE`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading memory %q: %w", key, err)
	}
	return &m, nil
}

// memoryWrite is a value for a key (identity.add_memory, personal.boundary_set).
type memoryWrite struct {
	Type         string
	Key          string
	Value        json.RawMessage
	Confidence   float64
	Source       string
	EvidenceRefs json.RawMessage
}

type memoryWriteOutput struct {
	MemoryID           uuid.UUID      `json:"memory_id"`
	Memory             identityMemory `json:"memory"`
	SupersededMemoryID *uuid.UUID     `json:"superseded_memory_id"`
	Changed            bool           `json:"changed"`
}

// putMemory makes w the current memory of its key. The same type, value, confidence and source again
// changes nothing; anything else closes the current memory (valid_to, end_reason superseded) and adds the
// new one, which links back to it (supersedes).
func putMemory(ctx context.Context, db executor.DB, w memoryWrite) (*memoryWriteOutput, error) {
	w.Key = strings.TrimSpace(w.Key)
	if w.Key == "" {
		return nil, executor.InvalidField("key", "is blank")
	}
	if len(w.EvidenceRefs) == 0 {
		w.EvidenceRefs = json.RawMessage("[]")
	}
	current, err := currentMemory(ctx, db, w.Key)
	if err != nil {
		return nil, err
	}
	if current != nil {
		var same bool
		if err := db.QueryRow(ctx, `SELECT $1::jsonb = $2::jsonb`, current.Value, w.Value).Scan(&same); err != nil {
			return nil, err
		}
		if same && current.MemoryType == w.Type && current.Confidence == w.Confidence && current.Source == w.Source {
			return &memoryWriteOutput{MemoryID: current.MemoryID, Memory: *current}, nil
		}
		if _, err := db.Exec(ctx, `UPDATE identity_memories SET valid_to = now(), end_reason = 'superseded', updated_at = now()
			WHERE id = $1`, current.MemoryID); err != nil {
			return nil, fmt.Errorf("error closing memory %s: %w", current.MemoryID, err)
		}
	}
	out := &memoryWriteOutput{Changed: true}
	var supersedes *uuid.UUID
	if current != nil {
		supersedes = &current.MemoryID
		out.SupersededMemoryID = supersedes
	}
	if err := db.QueryRow(ctx, `INSERT INTO identity_memories (memory_type, key, value, confidence, source, evidence_refs, supersedes)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, w.Type, w.Key, w.Value, w.Confidence, w.Source, w.EvidenceRefs, supersedes).
		Scan(&out.MemoryID); err != nil {
		return nil, err
	}
	if out.Memory, err = memoryByID(ctx, db, out.MemoryID); err != nil {
		return nil, err
	}
	return out, nil
}

// addMemoryInput is identity.add_memory's input as the handler reads it: the value is stored as given.
type addMemoryInput struct {
	businesspack.IdentityAddMemoryInput
	Value json.RawMessage `json:"value"`
}

// addMemory records a value for a key; see putMemory. Confidence defaults to 1 and source to user.
func addMemory(ctx context.Context, c *executor.Call, in addMemoryInput) (*memoryWriteOutput, error) {
	w := memoryWrite{Type: in.MemoryType, Key: in.Key, Value: in.Value, Confidence: 1, Source: in.Source}
	if in.Confidence != nil {
		w.Confidence = *in.Confidence
	}
	if w.Source == "" {
		w.Source = "user"
	}
	return putMemory(ctx, c.DB, w)
}

type expireMemoryInput struct {
	Selector map[string]json.RawMessage `json:"selector"`
	Reason   *string                    `json:"reason"`
}

type expireMemoryOutput struct {
	Expired      bool        `json:"expired"`
	ExpiredCount int         `json:"expired_count"`
	MemoryIDs    []uuid.UUID `json:"memory_ids"`
}

// memorySelector picks memories: every field given must match.
type memorySelector struct {
	memoryID   *uuid.UUID
	key        *string
	keyPrefix  *string
	memoryType *string
}

// memorySelectorFields are the fields of identity.expire_memory's selector.
var memorySelectorFields = []string{"key", "key_prefix", "memory_id", "memory_type"}

func parseMemorySelector(raw map[string]json.RawMessage) (memorySelector, error) {
	var s memorySelector
	if len(raw) == 0 {
		return s, executor.InvalidField("selector", "is empty: give one or more of %s", strings.Join(memorySelectorFields, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		field := "selector." + k
		var v string
		if string(raw[k]) == "null" || json.Unmarshal(raw[k], &v) != nil {
			if slices.Contains(memorySelectorFields, k) {
				return s, executor.InvalidField(field, "must be a string")
			}
		}
		v = strings.TrimSpace(v)
		switch k {
		case "memory_id":
			id, err := executor.RecordID(field, v)
			if err != nil {
				return s, err
			}
			s.memoryID = &id
		case "key":
			if v == "" {
				return s, executor.InvalidField(field, "is blank")
			}
			s.key = &v
		case "key_prefix":
			if v == "" {
				return s, executor.InvalidField(field, "is blank: it would match every memory; name memory_type alone for that")
			}
			s.keyPrefix = &v
		case "memory_type":
			if !slices.Contains(memoryTypes, v) {
				return s, executor.InvalidField(field, "must be one of %s", strings.Join(memoryTypes, ", "))
			}
			s.memoryType = &v
		default:
			return s, executor.InvalidField(field, "is not a way to select memories (%s)", strings.Join(memorySelectorFields, ", "))
		}
	}
	return s, nil
}

// expireMemory closes the current memories the selector matches (valid_to now, end_reason the reason).
// Expiring again changes nothing (expired false); a memory_id or key that never existed is not_found.
func expireMemory(ctx context.Context, c *executor.Call, in expireMemoryInput) (*expireMemoryOutput, error) {
	s, err := parseMemorySelector(in.Selector)
	if err != nil {
		return nil, err
	}
	reason := "expired"
	if in.Reason != nil && strings.TrimSpace(*in.Reason) != "" {
		reason = strings.TrimSpace(*in.Reason)
	}
	var prefix *string
	if s.keyPrefix != nil {
		p := executor.LikeEscape(*s.keyPrefix) + "%"
		prefix = &p
	}
	rows, err := c.DB.Query(ctx, `UPDATE identity_memories SET valid_to = now(), end_reason = $5, updated_at = now()
		WHERE valid_to IS NULL AND ($1::uuid IS NULL OR id = $1) AND ($2::text IS NULL OR key = $2)
		  AND ($3::text IS NULL OR key LIKE $3) AND ($4::text IS NULL OR memory_type = $4)
		RETURNING id`, s.memoryID, s.key, prefix, s.memoryType, reason)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("error expiring memories: %w", err)
	}
	if len(ids) == 0 {
		var known bool
		if err := c.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM identity_memories WHERE ($1::uuid IS NULL OR id = $1)
			AND ($2::text IS NULL OR key = $2))`, s.memoryID, s.key).Scan(&known); err != nil {
			return nil, err
		}
		switch {
		case !known && s.memoryID != nil:
			return nil, executor.NotFound("memory %s does not exist", *s.memoryID)
		case !known && s.key != nil:
			return nil, executor.NotFound("no memory has the key %q", *s.key)
		}
		return &expireMemoryOutput{MemoryIDs: []uuid.UUID{}}, nil
	}
	return &expireMemoryOutput{Expired: true, ExpiredCount: len(ids), MemoryIDs: ids}, nil
}

type listMemoriesOutput struct {
	Memories []identityMemory `json:"memories"`
	Count    int              `json:"count"`
}

// listMemories lists current memories (and, when asked, closed ones too), by key, newest value first.
func listMemories(ctx context.Context, c *executor.Call, in businesspack.ListMemoriesInput) (*listMemoriesOutput, error) {
	if in.MemoryType != "" && !slices.Contains(memoryTypes, in.MemoryType) {
		return nil, executor.InvalidField("memory_type", "must be one of %s", strings.Join(memoryTypes, ", "))
	}
	list, err := executor.QueryList(ctx, c.DB, scanIdentityMemory, `SELECT `+memoryColumnsM+` FROM identity_memories m
		WHERE ($1 = '' OR m.memory_type = $1) AND m.key LIKE $2 AND ($3 OR m.valid_to IS NULL)
		ORDER BY m.key, m.valid_from DESC, m.created_at DESC LIMIT $4`,
		in.MemoryType, executor.LikeEscape(in.KeyPrefix)+"%", in.IncludeExpired, executor.LimitOr(in.Limit, 50))
	if err != nil {
		return nil, err
	}
	return &listMemoriesOutput{Memories: list, Count: len(list)}, nil
}

type scorePatternInput struct {
	Key          string            `json:"key"`
	Value        json.RawMessage   `json:"value"`
	Confidence   float64           `json:"confidence"`
	EvidenceRefs []json.RawMessage `json:"evidence_refs"`
}

type scorePatternOutput struct {
	MemoryID           uuid.UUID      `json:"memory_id"`
	Memory             identityMemory `json:"memory"`
	PreviousConfidence *float64       `json:"previous_confidence"`
	SupersededMemoryID *uuid.UUID     `json:"superseded_memory_id"`
}

// scorePattern records an observed pattern. Scoring the same pattern (same key and value) again updates
// that memory in place: the new confidence, one more observation, and the new evidence added to the old.
// A new value for the key supersedes the old pattern. A key held by a memory of another type is a conflict.
func scorePattern(ctx context.Context, c *executor.Call, in scorePatternInput) (*scorePatternOutput, error) {
	key := strings.TrimSpace(in.Key)
	if key == "" {
		return nil, executor.InvalidField("key", "is blank")
	}
	evidence, err := json.Marshal(in.EvidenceRefs)
	if err != nil {
		return nil, err
	}
	if in.EvidenceRefs == nil {
		evidence = []byte("[]")
	}
	current, err := currentMemory(ctx, c.DB, key)
	if err != nil {
		return nil, err
	}
	if current != nil && current.MemoryType != "pattern" {
		return nil, executor.Conflict("key %q holds a %s memory, not a pattern; expire it first or score the pattern under another key",
			key, current.MemoryType)
	}
	if current != nil {
		var same bool
		if err := c.DB.QueryRow(ctx, `SELECT $1::jsonb = $2::jsonb`, current.Value, in.Value).Scan(&same); err != nil {
			return nil, err
		}
		if same {
			m, err := scanIdentityMemory(c.DB.QueryRow(ctx, `UPDATE identity_memories m SET confidence = $2,
					evidence_refs = m.evidence_refs || coalesce((SELECT jsonb_agg(e) FROM (SELECT DISTINCT e FROM jsonb_array_elements($3::jsonb) e
						WHERE NOT m.evidence_refs @> jsonb_build_array(e)) x), '[]'),
					observations = m.observations + 1, updated_at = now()
				WHERE m.id = $1 RETURNING `+memoryColumnsM, current.MemoryID, in.Confidence, evidence))
			if err != nil {
				return nil, err
			}
			previous := current.Confidence
			return &scorePatternOutput{MemoryID: m.MemoryID, Memory: m, PreviousConfidence: &previous}, nil
		}
	}
	w, err := putMemory(ctx, c.DB, memoryWrite{Type: "pattern", Key: key, Value: in.Value, Confidence: in.Confidence,
		Source: "inferred", EvidenceRefs: evidence})
	if err != nil {
		return nil, err
	}
	return &scorePatternOutput{MemoryID: w.MemoryID, Memory: w.Memory, SupersededMemoryID: w.SupersededMemoryID}, nil
}
