package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemhq/gem/llmconfig"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// fakeLLM speaks OpenAI's chat completions API (POST /v1/chat/completions, Bearer key, JSON body with
// model, messages and response_format; an answer of object "chat.completion" with choices) and answers each
// request with what answer returns for it. It keeps the requests it was sent.
type fakeLLM struct {
	*httptest.Server
	t      *testing.T
	mu     sync.Mutex
	seen   []llmRequest
	answer func(r llmRequest) string
}

// llmRequest is what a tool sent the model.
type llmRequest struct {
	System, User string
	// Format is response_format.type; Schema response_format.json_schema (structured outputs).
	Format string
	Schema map[string]any
}

func newFakeLLM(t *testing.T, answer func(r llmRequest) string) *fakeLLM {
	f := &fakeLLM{t: t, answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(format string, args ...any) {
		f.t.Errorf("fake LLM: "+format, args...)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error": {"message": %q, "type": "invalid_request_error", "param": null, "code": null}}`, fmt.Sprintf(format, args...))
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		fail("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
		return
	}
	if r.Header.Get("Authorization") != "Bearer sk-test" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		fail("Authorization %q, Content-Type %q", r.Header.Get("Authorization"), r.Header.Get("Content-Type"))
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		fail("body is not JSON: %v", err)
		return
	}
	if body.Model != "gpt-test" || len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[1].Role != "user" {
		fail("want model gpt-test and a system and a user message: %s", raw)
		return
	}
	req := llmRequest{System: body.Messages[0].Content, User: body.Messages[1].Content, Format: body.ResponseFormat.Type,
		Schema: body.ResponseFormat.JSONSchema.Schema}
	if req.Format == "json_schema" && (body.ResponseFormat.JSONSchema.Name == "" || !body.ResponseFormat.JSONSchema.Strict || req.Schema == nil) {
		fail("json_schema needs a name, strict and a schema: %s", raw)
		return
	}
	f.mu.Lock()
	f.seen = append(f.seen, req)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-" + uuid.NewString()[:8], "object": "chat.completion", "created": time.Now().Unix(), "model": "gpt-test-2026-01-01",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": f.answer(req), "refusal": nil},
			"logprobs":      nil,
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 300, "completion_tokens": 80, "total_tokens": 380},
	})
}

// config points the business pack's LLM at the fake.
func (f *fakeLLM) config() llmconfig.Config {
	return llmconfig.Config{BaseURL: f.URL + "/v1", APIKey: "sk-test", Model: "gpt-test"}
}

// last is the latest request; it fails the test when there was none.
func (f *fakeLLM) last(t *testing.T) llmRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.seen, "the model was not asked")
	return f.seen[len(f.seen)-1]
}

func (f *fakeLLM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// answers returns an answer function that gives JSON of v.
func answerJSON(v any) func(llmRequest) string {
	return func(llmRequest) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// marketingJob is a job made with plain SQL: a lead in suburb, an inspection with defects and a
// measurement, an accepted quote with lines, and the job, completed or not.
type marketingJob struct {
	lead, inspection, quote, job string
	number                       int64
}

func (b *testBundle) marketingJob(t *testing.T, ctx context.Context, suburb string, completed bool) marketingJob {
	t.Helper()
	var j marketingJob
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO leads (name, phone, suburb, address) VALUES ('Ann Rossi', $1, $2, '14 Wardell Rd')
		RETURNING id`, newPhone(), suburb).Scan(&j.lead))
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO inspections (lead_id, summary) VALUES ($1, 'Ridge bedding failing along the north side')
		RETURNING id`, j.lead).Scan(&j.inspection))
	_, err := b.pool.Exec(ctx, `INSERT INTO inspection_defects (inspection_id, category, severity, notes, location) VALUES
		($1, 'ridge', 'high', 'Cracked ridge bedding, water entering the roof space', 'north ridge'),
		($1, 'gutter', 'low', 'Gutters full of leaves', NULL)`, j.inspection)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO inspection_measurements (inspection_id, kind, label, value, unit, metric_value, metric_unit)
		VALUES ($1, 'ridge_length', 'ridge length', 18.5, 'm', 18.5, 'm')`, j.inspection)
	require.NoError(t, err)
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO quotes (lead_id, inspection_id, valid_until) VALUES ($1, $2, current_date + 30)
		RETURNING id`, j.lead, j.inspection).Scan(&j.quote))
	_, err = b.pool.Exec(ctx, `INSERT INTO quote_line_items (quote_id, position, description, quantity, unit, unit_price_cents, line_total_cents) VALUES
		($1, 1, 'Rebed and repoint ridge capping', 18.5, 'm', 9500, 175750),
		($1, 2, 'Clean gutters and downpipes', 1, 'each', 22000, 22000)`, j.quote)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE quotes SET status = 'accepted', subtotal_cents = 197750, gst_cents = 19775, total_cents = 217525,
		sent_at = now(), accepted_at = now() WHERE id = $1`, j.quote)
	require.NoError(t, err)
	status, completedAt := "scheduled", (*time.Time)(nil)
	if completed {
		now := time.Now()
		status, completedAt = "completed", &now
	}
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO jobs (quote_id, status, start_date, end_date, completed_at, completion_notes)
		VALUES ($1, $2, current_date - 3, current_date - 2, $3, 'Ridge rebedded and repointed in flexible pointing; gutters cleared')
		RETURNING id, number`, j.quote, status, completedAt).Scan(&j.job, &j.number))
	_, err = b.pool.Exec(ctx, `INSERT INTO job_progress_updates (job_id, summary) VALUES ($1, 'Old bedding removed, ridge caps cleaned and relaid')`, j.job)
	require.NoError(t, err)
	return j
}

// requireLLMNotConfigured checks a not_configured receipt of an LLM tool.
func requireLLMNotConfigured(t *testing.T, r *registry.Receipt) {
	t.Helper()
	require.Equal(t, registry.StatusNotConfigured, r.Status, "%s: %s", r.ToolName, r.Result)
	require.Equal(t, registry.CodeNotConfigured, r.Error.Code, "%s: %s", r.ToolName, r.Error.Message)
	d := decodeDetails(t, r)
	require.ElementsMatch(t, []any{"GEM_LLM_API_KEY", "GEM_LLM_MODEL"}, d["required_env"], r.ToolName)
	require.NotEmpty(t, d["next_steps"])
	require.Contains(t, d["reason"], r.ToolName)
	require.Empty(t, r.Effects.DBWrites)
}

func TestGEMMarketingScheduleContent(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	asset, _ := b.ok(t, ctx, "media.register_asset", J{"file_ref": "s3://gem-media/newtown/ridge-after.jpg", "asset_type": "photo"})
	assetID := asset.str(t, "asset_id")
	loc, err := time.LoadLocation("Australia/Sydney")
	require.NoError(t, err)
	nextWeek := time.Now().In(loc).AddDate(0, 0, 7)
	publishAt := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	r, rc := b.ok(t, ctx, "marketing.schedule_content", J{"items": []J{
		{"title": "Ridge repair in Newtown", "channel": "gmb", "publish_at": publishAt.Format(time.RFC3339),
			"content": "We rebedded a ridge in Newtown.", "asset_refs": []string{"s3://gem-media/newtown/ridge-after.jpg"}, "priority": "high"},
		{"title": "Winter gutter check", "platform": "Meta", "publish_date": nextWeek.Format(time.DateOnly), "notes": "boost if it does well"},
	}})
	ids := r.list(t, "created_task_ids")
	require.Len(t, ids, 2)
	require.Equal(t, map[string]int{"os_tasks insert": 2, "marketing_content_items insert": 2}, writes(rc))
	require.Equal(t, []any{assetID}, r.list(t, "items.0.asset_ids"))
	require.Equal(t, "meta", r.str(t, "items.1.channel"))

	var title, priority, contextType string
	var due time.Time
	var description *string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT title, description, priority, due_at, context_type FROM os_tasks WHERE id = $1`, ids[0]).
		Scan(&title, &description, &priority, &due, &contextType))
	require.Equal(t, "Publish on Google Business Profile: Ridge repair in Newtown", title)
	require.Contains(t, *description, "We rebedded a ridge in Newtown.")
	require.Contains(t, *description, "s3://gem-media/newtown/ridge-after.jpg")
	require.Equal(t, "high", priority)
	require.True(t, publishAt.Equal(due), "the task is due when the item goes out: %s", due)
	require.Equal(t, "marketing_content", contextType)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT due_at FROM os_tasks WHERE id = $1`, ids[1]).Scan(&due))
	require.Equal(t, nextWeek.Format(time.DateOnly)+" 09:00", due.In(loc).Format("2006-01-02 15:04"), "a date goes out at 9 am, business time")
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM marketing_content_items c JOIN os_tasks t ON t.id = c.task_id`))

	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, tt := range []struct {
		items   any
		message string
	}{
		{[]J{}, "items is empty"},
		{[]J{{"channel": "gmb", "publish_at": publishAt.Format(time.RFC3339)}}, "items[0]: title is missing"},
		{[]J{{"title": "x", "channel": "tiktok", "publish_at": publishAt.Format(time.RFC3339)}}, `items[0]: channel "tiktok" is not one of`},
		{[]J{{"title": "x", "channel": "gmb"}}, "items[0]: publish_at (a date-time) or publish_date"},
		{[]J{{"title": "ok", "channel": "gmb", "publish_date": nextWeek.Format(time.DateOnly)}, {"title": "x", "channel": "gmb", "publish_at": past}},
			"items[1]: publish_at " + past + " has passed"},
		{[]J{{"title": "x", "channel": "gmb", "publish_date": "2020-01-01"}}, "publish_date 2020-01-01 has passed"},
		{[]J{{"title": "x", "channel": "gmb", "publish_date": nextWeek.Format(time.DateOnly), "hashtags": "#roof"}}, `items[0]: unknown field "hashtags"`},
		// An item's keys are declared in the registry's schema, which refuses a value of the wrong type first.
		{[]J{{"title": 5, "channel": "gmb", "publish_date": nextWeek.Format(time.DateOnly)}}, "/items/0/title: expected string or null"},
		{[]J{{"title": "x", "channel": "gmb", "publish_date": nextWeek.Format(time.DateOnly), "priority": "urgent"}}, `priority "urgent" is not low, normal or high`},
	} {
		r := b.refused(t, ctx, registry.CodeValidation, "marketing.schedule_content", J{"items": tt.items})
		require.Contains(t, r.Error.Message, tt.message)
	}
	r2 := b.refused(t, ctx, registry.CodeNotFound, "marketing.schedule_content", J{"items": []J{
		{"title": "x", "channel": "website", "publish_date": nextWeek.Format(time.DateOnly), "asset_refs": []string{"s3://nowhere.jpg"}}}})
	require.Contains(t, r2.Error.Message, "s3://nowhere.jpg")
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM os_tasks`), "a refused call schedules nothing")
}

func TestGEMMarketingLogCampaignResult(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	r, rc := b.ok(t, ctx, "marketing.log_campaign_result", J{"channel": "google_ads", "notes": "best week so far", "campaign": "Ridge repairs",
		"period_start": "2026-11-01", "period_end": "2026-11-07",
		"metrics": J{"Impressions": 12000, "clicks": 300, "leads": 6, "spend": 450.6, "conversions": 4, "Cost per lead": 75.1}})
	id := r.str(t, "log_id")
	require.Equal(t, map[string]int{"marketing_campaign_results insert": 1}, writes(rc))
	require.Equal(t, []string{id}, wroteIDs(rc, "marketing_campaign_results", "insert"))
	requireDecimal(t, "0.025", r.get(t, "derived.click_through_rate"), "ctr")
	requireDecimal(t, "1.5", r.get(t, "derived.cost_per_click"), "cpc")
	requireDecimal(t, "75.1", r.get(t, "derived.cost_per_lead"), "cpl")
	requireDecimal(t, "0.0133", r.get(t, "derived.conversion_rate"), "conversion rate")
	requireDecimal(t, "75.1", r.get(t, "metrics.cost_per_lead"), "names fold to snake_case")
	var metrics string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT metrics::text FROM marketing_campaign_results WHERE id = $1 AND channel = 'google_ads'
		AND period_end = '2026-11-07' AND notes = 'best week so far'`, id).Scan(&metrics))
	require.JSONEq(t, `{"impressions": 12000, "clicks": 300, "leads": 6, "spend": 450.6, "conversions": 4, "cost_per_lead": 75.1}`, metrics)

	r, _ = b.ok(t, ctx, "marketing.log_campaign_result", J{"channel": "meta", "metrics": J{"reach": 5000, "spend_cents": 12050, "leads": 2}})
	requireDecimal(t, "60.25", r.get(t, "derived.cost_per_lead"), "spend_cents counts as dollars / 100")
	require.Nil(t, r.get(t, "derived.click_through_rate"))
	require.Nil(t, r.get(t, "campaign"))

	for _, tt := range []struct {
		metrics any
		extra   J
		message string
	}{
		{J{}, nil, "metrics is empty"},
		{J{"clicks": "300"}, nil, `metrics.clicks is "300", not a number`},
		{J{"clicks": 2.5}, nil, "whole number"},
		{J{"leads": -1}, nil, "whole number, 0 or more"},
		{J{"spend": -10}, nil, "cannot be negative"},
		{J{"clicks": 50, "impressions": 10}, nil, "clicks (50) exceed impressions (10)"},
		{J{"clicks": 1, "Clicks": 2}, nil, "metric clicks is given twice"},
		{J{"ctr%": 2}, nil, `metric name "ctr%"`},
		{J{"clicks": 1}, J{"period_start": "2026-11-07", "period_end": "2026-11-01"}, "period_end 2026-11-01 is before period_start 2026-11-07"},
	} {
		in := J{"channel": "gmb", "metrics": tt.metrics}
		for k, v := range tt.extra {
			in[k] = v
		}
		r := b.refused(t, ctx, registry.CodeValidation, "marketing.log_campaign_result", in)
		require.Contains(t, r.Error.Message, tt.message)
	}
}

func TestGEMMarketingMetaAdPack(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	ads := []J{
		{"primary_text": "Cracked ridge bedding lets water in. We rebed and repoint ridges across Newtown, with photos of every step.",
			"headline": "Ridge repairs in Newtown", "description": "Free roof check", "call_to_action": "GET_QUOTE", "asset_ref": "s3://gem-media/newtown/ridge-after.jpg"},
		{"primary_text": "Two ridges rebedded in Newtown this month.", "headline": "This headline is far too long for a Meta ad slot, surely",
			"description": "x", "call_to_action": "LEARN_MORE", "asset_ref": ""},
		{"primary_text": "Book a free roof inspection.", "headline": "Free roof inspection", "description": "Newtown and nearby",
			"call_to_action": "CALL_NOW", "asset_ref": "not-a-given-ref"},
	}
	fake := newFakeLLM(t, answerJSON(J{"ads": ads}))
	b.business.LLM = fake.config()
	b.startExecutor(t, nil)

	b.marketingJob(t, ctx, "Newtown", true)
	b.marketingJob(t, ctx, "Newtown", false) // not completed: no proof yet
	b.marketingJob(t, ctx, "Enmore", true)
	b.ok(t, ctx, "media.register_asset", J{"file_ref": "s3://gem-media/newtown/ridge-after.jpg", "asset_type": "photo", "suburb": "Newtown",
		"notes": "Rebedded ridge, north side", "tags": []string{"ridge repair", "after"}})

	r, rc := b.ok(t, ctx, "marketing.generate_meta_ad_pack", J{"offer": "Free roof inspection", "suburb_or_region": "Newtown and Enmore",
		"service": "ridge", "assets_refs": []string{"s3://gem-media/newtown/ridge-after.jpg"}})
	require.Empty(t, rc.Effects.DBWrites)
	require.Len(t, r.list(t, "ads"), 2, "the variant over the headline limit is dropped")
	require.Equal(t, "Ridge repairs in Newtown", r.str(t, "ads.0.headline"))
	require.Equal(t, "s3://gem-media/newtown/ridge-after.jpg", r.str(t, "ads.0.asset_ref"))
	require.Equal(t, json.Number("2"), r.get(t, "ads.1.variant"))
	require.Nil(t, r.get(t, "ads.1.asset_ref"), "a ref that was not given is not passed on")
	require.Contains(t, r.str(t, "dropped.0"), "ad 2: headline has 56 characters (at most 40)")
	require.Equal(t, json.Number("2"), r.get(t, "proof.completed_jobs"))
	require.Equal(t, json.Number("2"), r.get(t, "proof.completed_with_service"))
	require.Equal(t, "openai/gpt-test", r.str(t, "written_by"))

	req := fake.last(t)
	require.Equal(t, "json_schema", req.Format)
	for _, fact := range []string{"- offer: Free roof inspection", "- completed jobs in Newtown and Enmore: 2", "Rebed and repoint ridge capping",
		`Photo "s3://gem-media/newtown/ridge-after.jpg"`, "- notes: Rebedded ridge, north side", "- tags: ridge repair, after"} {
		require.Contains(t, req.User, fact)
	}
	require.NotContains(t, req.User, "Ann Rossi", "customers are never named")
	require.NotContains(t, req.User, "Wardell", "nor their addresses")

	b.refused(t, ctx, registry.CodeNotFound, "marketing.generate_meta_ad_pack", J{"offer": "x", "suburb_or_region": "Newtown", "assets_refs": []string{"s3://nowhere.jpg"}})
	b.refused(t, ctx, registry.CodeValidation, "marketing.generate_meta_ad_pack", J{"offer": " ", "suburb_or_region": "Newtown"})
}

func TestGEMMarketingGoogleAdsPack(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	answer := make(chan any, 2)
	fake := newFakeLLM(t, func(llmRequest) string { v, _ := json.Marshal(<-answer); return string(v) })
	b.business.LLM = fake.config()
	b.startExecutor(t, nil)
	b.marketingJob(t, ctx, "Marrickville", true)

	answer <- J{
		"headlines":    []string{"Ridge Repairs Marrickville", "Rebed and Repoint Ridges", "Free Roof Inspection", "ridge repairs marrickville", "A headline that is much too long for Google"},
		"descriptions": []string{"We rebed and repoint ridge capping across the Inner West.", "Photos of every step. Book a free roof inspection today."},
		"keywords": []J{{"text": "Ridge Repair Marrickville", "match_type": "phrase"}, {"text": "ridge repair marrickville", "match_type": "phrase"},
			{"text": "roof ridge rebedding", "match_type": "exact"}},
		"negative_keywords": []string{"jobs", "Course", "jobs"},
		"path1":             "Ridge Repairs", "path2": "Marrickville NSW 2204 area",
	}
	r, _ := b.ok(t, ctx, "marketing.generate_google_ads_pack", J{"service": "ridge", "region": "Marrickville", "landing_page": "https://acme.example/ridge"})
	require.Equal(t, []any{"Ridge Repairs Marrickville", "Rebed and Repoint Ridges", "Free Roof Inspection"}, r.list(t, "pack.headlines"))
	require.Len(t, r.list(t, "pack.keywords"), 2, "keywords are lowercased and kept once")
	require.Equal(t, []any{"jobs", "course"}, r.list(t, "pack.negative_keywords"))
	require.Equal(t, "ridge-repairs", r.str(t, "pack.path1"))
	require.Equal(t, "marrickville-ns", r.str(t, "pack.path2"))
	require.Equal(t, "https://acme.example/ridge", r.str(t, "pack.final_url"))
	require.Contains(t, r.str(t, "dropped.0"), "at most 30")
	require.Contains(t, fake.last(t).User, "- completed jobs in Marrickville: 1")
	require.Contains(t, fake.last(t).User, "- landing page: https://acme.example/ridge")

	answer <- J{"headlines": []string{"Only one"}, "descriptions": []string{"One description"}, "keywords": []J{}, "negative_keywords": []string{}, "path1": "", "path2": ""}
	r2 := b.run(t, ctx, "marketing.generate_google_ads_pack", J{"service": "ridge", "region": "Marrickville"})
	require.Equal(t, registry.CodeHandlerError, r2.Error.Code)
	d := decodeDetails(t, r2)
	require.Equal(t, "malformed_model_output", d["reason"])
	require.Contains(t, d["problems"].([]any)[0], "1 usable headlines and 1 usable descriptions")

	b.refused(t, ctx, registry.CodeValidation, "marketing.generate_google_ads_pack", J{"service": "ridge", "region": "x", "landing_page": "acme.example"})
	require.Equal(t, 2, fake.count())
}

func TestGEMMarketingCaseStudy(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	long := strings.Repeat("We replaced the ridge. ", 60)
	answer := make(chan J, 3)
	fake := newFakeLLM(t, func(llmRequest) string { v, _ := json.Marshal(<-answer); return string(v) })
	b.business.LLM = fake.config()
	b.startExecutor(t, nil)
	done := b.marketingJob(t, ctx, "Dulwich Hill", true)
	open := b.marketingJob(t, ctx, "Dulwich Hill", false)
	b.ok(t, ctx, "media.register_asset", J{"file_ref": "s3://gem-media/dh/after.jpg", "asset_type": "photo", "job_id": done.job, "tags": []string{"after"}})

	answer <- J{"title": "Ridge rebedding in Dulwich Hill", "draft": "Water was getting in along the north ridge. We rebedded it.\n\nThe roof is dry."}
	r, rc := b.ok(t, ctx, "marketing.generate_case_study_from_job", J{"job_id": done.job, "format": "blog"})
	require.Empty(t, rc.Effects.DBWrites)
	require.Equal(t, "Water was getting in along the north ridge. We rebedded it.\n\nThe roof is dry.", r.str(t, "draft"))
	require.Equal(t, "Ridge rebedding in Dulwich Hill", r.str(t, "title"))
	require.Equal(t, "blog", r.str(t, "format"))
	require.Equal(t, []any{"s3://gem-media/dh/after.jpg"}, r.list(t, "photos"))
	user := fake.last(t).User
	for _, fact := range []string{fmt.Sprintf("- job: J-%04d", done.number), "- suburb: Dulwich Hill", "Rebed and repoint ridge capping (18.5 m)",
		"ridge, high: Cracked ridge bedding, water entering the roof space (north ridge)", "- measurement: ridge length 18.5 m",
		"- progress: Old bedding removed", "- completion notes: Ridge rebedded", "Photo s3://gem-media/dh/after.jpg"} {
		require.Contains(t, user, fact)
	}
	require.NotContains(t, user, "Ann Rossi")
	require.NotContains(t, user, "175750", "prices stay out")
	require.Contains(t, fake.last(t).System, "blog article in Markdown")

	answer <- J{"title": "Short", "draft": long}
	r, _ = b.ok(t, ctx, "marketing.generate_case_study_from_job", J{"job_id": done.job, "format": "short"})
	require.Equal(t, true, r.get(t, "trimmed"))
	require.LessOrEqual(t, len(r.str(t, "draft")), 700)
	require.True(t, strings.HasSuffix(r.str(t, "draft"), "ridge."), "cut at a sentence: %q", r.str(t, "draft"))

	cr := b.refused(t, ctx, registry.CodeConflict, "marketing.generate_case_study_from_job", J{"job_id": open.job})
	require.Contains(t, cr.Error.Message, "is scheduled")
	b.refused(t, ctx, registry.CodeNotFound, "marketing.generate_case_study_from_job", J{"job_id": uuid.NewString()})
	b.refused(t, ctx, registry.CodeNotFound, "marketing.generate_case_study_from_job", J{"job_id": "J-0001"})
	require.Equal(t, 2, fake.count(), "refused calls never reach the model")
}

func TestGEMMarketingGMBPost(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	fake := newFakeLLM(t, answerJSON(J{"summary": "We rebedded a ridge in Petersham this week. Water had been getting in along the north side.",
		"action_type": "CALL"}))
	b.business.LLM = fake.config()
	b.startExecutor(t, nil)
	b.marketingJob(t, ctx, "Petersham", true)
	b.ok(t, ctx, "media.register_asset", J{"file_ref": "s3://gem-media/petersham/clip.mp4", "asset_type": "video", "notes": "Drone pass over the ridge"})

	r, _ := b.ok(t, ctx, "marketing.generate_gmb_post", J{"topic": "Ridge repair", "suburb_or_region": "Petersham", "cta": "https://acme.example/book",
		"asset_refs": []string{"s3://gem-media/petersham/clip.mp4"}})
	require.Equal(t, "LEARN_MORE", r.str(t, "post.call_to_action.action_type"), "a link needs a button that opens it")
	require.Equal(t, "https://acme.example/book", r.str(t, "post.call_to_action.url"))
	require.Equal(t, "STANDARD", r.str(t, "post.topic_type"))
	require.Equal(t, []any{map[string]any{"source_ref": "s3://gem-media/petersham/clip.mp4", "media_format": "VIDEO"}}, r.list(t, "post.media"))
	require.Contains(t, fake.last(t).User, "- notes: Drone pass over the ridge")
	require.Contains(t, fake.last(t).User, "- completed jobs in Petersham: 1")

	r, _ = b.ok(t, ctx, "marketing.generate_gmb_post", J{"topic": "Gutters", "suburb_or_region": "Petersham", "cta": "Book"})
	require.Equal(t, "BOOK", r.str(t, "post.call_to_action.action_type"), "an action type given is kept")
	require.Nil(t, r.get(t, "post.call_to_action.url"))
	require.Contains(t, fake.last(t).User, "- call to action type required: BOOK")
}

func TestGEMMarketingNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	j := b.marketingJob(t, ctx, "Newtown", true)
	for tool, in := range map[string]J{
		"marketing.generate_meta_ad_pack":        {"offer": "Free roof inspection", "suburb_or_region": "Newtown"},
		"marketing.generate_google_ads_pack":     {"service": "ridge repair", "region": "Newtown"},
		"marketing.generate_case_study_from_job": {"job_id": j.job},
		"marketing.generate_gmb_post":            {"topic": "Ridge repair", "suburb_or_region": "Newtown"},
	} {
		requireLLMNotConfigured(t, b.run(t, ctx, tool, in))
	}
}

func TestGEMMarketingMalformedAnswer(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	fake := newFakeLLM(t, func(llmRequest) string { return `{"summary": 42}` })
	b.business.LLM = fake.config()
	b.startExecutor(t, nil)
	r := b.run(t, ctx, "marketing.generate_gmb_post", J{"topic": "Ridge repair", "suburb_or_region": "Newtown"})
	require.Equal(t, registry.CodeHandlerError, r.Error.Code)
	d := decodeDetails(t, r)
	require.Equal(t, "malformed_model_output", d["reason"])
	require.Equal(t, `{"summary": 42}`, d["answer"])
	require.Equal(t, 1, r.Attempt, "a malformed answer is not retried")
	require.Equal(t, 1, fake.count())
}
