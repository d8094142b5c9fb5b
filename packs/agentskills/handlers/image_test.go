package agentskillshandlers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"testing"

	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

type imageResult struct {
	RequestID string `json:"request_id"`
	Model     string `json:"model"`
	Count     int    `json:"count"`
	Images    []struct {
		ImageID       uuid.UUID `json:"image_id"`
		Ordinal       int       `json:"ordinal"`
		MIMEType      *string   `json:"mime_type"`
		Bytes         *int      `json:"bytes"`
		SHA256        *string   `json:"sha256"`
		URL           *string   `json:"url"`
		RevisedPrompt *string   `json:"revised_prompt"`
	} `json:"images"`
}

func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// fakeImages speaks the OpenAI Images API at /v1/images/generations; answer writes the response.
func fakeImages(t *testing.T, answer func(f *fakeProvider, w http.ResponseWriter, body map[string]any)) *fakeProvider {
	return newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		f.expect(r.Method == http.MethodPost, "method %s, want POST", r.Method)
		f.expect(r.URL.Path == "/v1/images/generations", "path %s", r.URL.Path)
		f.expect(r.Header.Get("Authorization") == "Bearer sk-img", "Authorization %q", r.Header.Get("Authorization"))
		f.expect(r.Header.Get("Content-Type") == "application/json", "Content-Type %q", r.Header.Get("Content-Type"))
		body := f.decodeBody(r)
		f.expect(body["model"] == "gpt-image-test", "model %v", body["model"])
		prompt, _ := body["prompt"].(string)
		f.expect(prompt != "", "prompt %v", body["prompt"])
		answer(f, w, body)
	})
}

func imageConfig(url string) agentskillspack.Config {
	return agentskillspack.Config{Image: agentskillspack.ImageConfig{URL: url + "/v1", APIKey: "sk-img", Model: "gpt-image-test"}}
}

func TestImageGenerate(t *testing.T) {
	t.Parallel()
	pngData := tinyPNG(t)
	fake := fakeImages(t, func(f *fakeProvider, w http.ResponseWriter, body map[string]any) {
		f.expect(body["n"] == 2.0, "n %v", body["n"])
		f.expect(body["size"] == "1024x1024", "size %v", body["size"])
		f.expect(body["quality"] == "low", "quality %v", body["quality"])
		writeJSON(w, http.StatusOK, map[string]any{
			"created": 1735689600,
			"data": []any{
				map[string]any{"b64_json": base64.StdEncoding.EncodeToString(pngData), "revised_prompt": "A red pixel, centred."},
				map[string]any{"url": "https://images.example.com/abc.png"},
			},
			"usage": map[string]any{"input_tokens": 12, "output_tokens": 272, "total_tokens": 284},
		})
	})
	ctx, b := setup(t, imageConfig(fake.URL))

	input := `{"request_id": "req-1", "prompt": "a red pixel", "n": 2, "size": "1024x1024", "quality": "low"}`
	var got imageResult
	r := b.succeed(t, ctx, "image.generate", input, &got)
	require.Equal(t, "req-1", got.RequestID)
	require.Equal(t, "gpt-image-test", got.Model)
	require.Equal(t, 2, got.Count)

	first, second := got.Images[0], got.Images[1]
	sum := sha256.Sum256(pngData)
	require.Equal(t, "image/png", *first.MIMEType)
	require.Equal(t, len(pngData), *first.Bytes)
	require.Equal(t, hex.EncodeToString(sum[:]), *first.SHA256)
	require.Nil(t, first.URL)
	require.Equal(t, "A red pixel, centred.", *first.RevisedPrompt)
	require.Equal(t, "https://images.example.com/abc.png", *second.URL)
	require.Nil(t, second.Bytes)
	require.Nil(t, second.MIMEType)

	// The asset is in the database, and the receipt says what was written and what left the building.
	var stored []byte
	var createdBy uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT data, created_by_call FROM generated_images WHERE id = $1`, first.ImageID).Scan(&stored, &createdBy))
	require.Equal(t, pngData, stored)
	require.Equal(t, r.CallID, createdBy)
	require.Equal(t, map[string]int{"generated_images insert": 2}, writes(r))
	require.Equal(t, []registry.OutsideEffect{{Kind: "image_generation", Target: fake.Listener.Addr().String(), Reference: "req-1"}}, r.Effects.Outside)
	require.Equal(t, "req-1", r.IdempotencyKey)

	// The same request id does not pay twice: the first call's images come back.
	again := b.call(t, ctx, "image.generate", input)
	requireSucceeded(t, again, nil)
	require.True(t, again.IdempotencyHit)
	require.Equal(t, r.CallID, *again.IdempotencyOf)
	require.JSONEq(t, string(r.Result), string(again.Result))
	require.Equal(t, 1, fake.checked(t))
	require.Equal(t, 2, b.count(t, ctx, `SELECT count(*) FROM generated_images`))
}

func TestImageGenerateFailuresAreNotRetried(t *testing.T) {
	t.Parallel()
	answers := make(chan func(w http.ResponseWriter), 1)
	fake := fakeImages(t, func(f *fakeProvider, w http.ResponseWriter, body map[string]any) { (<-answers)(w) })
	ctx, b := setup(t, imageConfig(fake.URL))

	// A provider error ends the call at once, even with attempts to spare: running again could pay twice.
	answers <- func(w http.ResponseWriter) {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"message": "The server had an error", "type": "server_error"}})
	}
	r := b.call(t, ctx, "image.generate", `{"request_id": "req-2", "prompt": "a castle"}`)
	d := requireFailed(t, r, registry.StatusFailed, registry.CodeHandlerError)
	require.Equal(t, "provider_unavailable", d["reason"])
	require.Equal(t, true, d["retryable"])
	require.Equal(t, 1, r.Attempt)

	// A refused prompt says why.
	answers <- func(w http.ResponseWriter) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "Your request was rejected by the safety system.", "type": "image_generation_user_error", "code": "moderation_blocked",
		}})
	}
	r = b.call(t, ctx, "image.generate", `{"request_id": "req-3", "prompt": "something refused"}`)
	d = requireFailed(t, r, registry.StatusFailed, registry.CodeHandlerError)
	require.Equal(t, "provider_error", d["reason"])
	require.Contains(t, r.Error.Message, "moderation_blocked")

	// An answer without images is a failure, not an empty success.
	answers <- func(w http.ResponseWriter) {
		writeJSON(w, http.StatusOK, map[string]any{"created": 1, "data": []any{}})
	}
	d = requireFailed(t, b.call(t, ctx, "image.generate", `{"request_id": "req-4", "prompt": "x"}`), registry.StatusFailed, registry.CodeHandlerError)
	require.Equal(t, "malformed_provider_response", d["reason"])

	// A failed call holds no key: the same request id may be tried again.
	answers <- func(w http.ResponseWriter) {
		writeJSON(w, http.StatusOK, map[string]any{"created": 1, "data": []any{map[string]any{"url": "https://images.example.com/castle.png"}}})
	}
	var got imageResult
	requireSucceeded(t, b.call(t, ctx, "image.generate", `{"request_id": "req-2", "prompt": "a castle"}`), &got)
	require.Equal(t, 1, got.Count)
	require.Equal(t, 4, fake.checked(t))
	require.Equal(t, 1, b.count(t, ctx, `SELECT count(*) FROM generated_images`))
}

func TestImageGenerateNotConfigured(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t, agentskillspack.Config{Image: agentskillspack.ImageConfig{APIKey: "sk-img"}})
	d := requireNotConfigured(t, b.call(t, ctx, "image.generate", `{"request_id": "r", "prompt": "x"}`), "GEM_IMAGE_API_KEY", "GEM_IMAGE_MODEL")
	require.Contains(t, d.Reason, "GEM_IMAGE_MODEL not set")
	require.Contains(t, d.NextSteps[1], "GEM_IMAGE_URL")

	// A base URL Main reported at start is not tried: the call names the variable.
	env := map[string]string{"GEM_IMAGE_URL": "ftp://images.example/v1", "GEM_IMAGE_API_KEY": "sk-img", "GEM_IMAGE_MODEL": "gpt-image-1"}
	ctx, b = setup(t, agentskillspack.ConfigFromEnv(func(k string) string { return env[k] }))
	d = requireNotConfigured(t, b.call(t, ctx, "image.generate", `{"request_id": "r", "prompt": "x"}`), "GEM_IMAGE_URL")
	require.Contains(t, d.Reason, `GEM_IMAGE_URL="ftp://images.example/v1" is not an http(s) URL`)
}
