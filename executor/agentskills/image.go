package agentskills

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
)

const (
	// maxImageAnswerBytes bounds an image provider's answer (base64 images are large).
	maxImageAnswerBytes = 128 << 20
	// OutsideKindImage is the kind of the outside effect image.generate records.
	OutsideKindImage = "image_generation"
)

// baseURL reads URL (defaults filled in).
func (c ImageConfig) baseURL() (*url.URL, error) {
	base, err := url.Parse(strings.TrimRight(c.URL, "/"))
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("%s is not a URL: %q", EnvImageURL, c.URL)
	}
	return base, nil
}

// notConfigured returns the not_configured error for a missing image provider configuration, or nil.
func (c ImageConfig) notConfigured(tool string) error {
	required := []string{EnvImageAPIKey, EnvImageModel}
	var missing []string
	if c.APIKey == "" {
		missing = append(missing, EnvImageAPIKey)
	}
	if c.Model == "" {
		missing = append(missing, EnvImageModel)
	}
	if len(missing) == 0 {
		return nil
	}
	return executor.NotConfigured(
		fmt.Sprintf("%s needs an image provider, and none is configured: %s not set", tool, strings.Join(missing, " and ")),
		required,
		fmt.Sprintf("Set %s to the provider's API key and %s to an image model (for example gpt-image-1 or dall-e-3).", EnvImageAPIKey, EnvImageModel),
		fmt.Sprintf("Set %s to the base URL of an OpenAI Images API compatible provider (default %s; requests go to {base}/images/generations).", EnvImageURL, DefaultImageURL),
		"Restart the executor: it reads the configuration once, at start.",
	)
}

// generatedImage is one image in image.generate's result.
type generatedImage struct {
	ImageID       uuid.UUID `json:"image_id"`
	Ordinal       int       `json:"ordinal"`
	MIMEType      *string   `json:"mime_type"`
	Bytes         *int      `json:"bytes"`
	SHA256        *string   `json:"sha256"`
	URL           *string   `json:"url"`
	RevisedPrompt *string   `json:"revised_prompt"`
}

type generateImageInput struct {
	RequestID string `json:"request_id"`
	Prompt    string `json:"prompt"`
	Size      string `json:"size"`
	Quality   string `json:"quality"`
	N         int    `json:"n"`
}

// generateImage asks the image provider for images (OpenAI Images API: POST {base}/images/generations) and
// keeps them in generated_images. It costs money, so it runs once per call (the executor guarantees it) and
// once per request_id (the tool is keyed on it); a failed provider request is never retried automatically.
func (p *pack) generateImage(ctx context.Context, c *executor.Call, in generateImageInput) (any, error) {
	cfg := p.cfg.Image
	if err := cfg.notConfigured(c.Tool.Name); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, executor.Invalid("prompt is blank")
	}
	if in.N <= 0 {
		in.N = 1
	}
	base, err := cfg.baseURL()
	if err != nil {
		return nil, executor.NotConfigured(err.Error(), []string{EnvImageURL},
			fmt.Sprintf("Set %s to the provider's base URL, such as %s.", EnvImageURL, DefaultImageURL))
	}
	provider := base.Host

	body := map[string]any{"model": cfg.Model, "prompt": in.Prompt, "n": in.N}
	if in.Size != "" {
		body["size"] = in.Size
	}
	if in.Quality != "" {
		body["quality"] = in.Quality
	}
	var res struct {
		Created int64 `json:"created"`
		Data    []struct {
			B64JSON       string  `json:"b64_json"`
			URL           string  `json:"url"`
			RevisedPrompt *string `json:"revised_prompt"`
		} `json:"data"`
	}
	header := http.Header{"Authorization": {"Bearer " + cfg.APIKey}}
	err = p.sendJSON(ctx, http.MethodPost, base.JoinPath("images", "generations").String(), header, body, &res, provider, maxImageAnswerBytes)
	if err != nil {
		return nil, providerFailure(ctx, provider, EnvImageAPIKey, err, false)
	}
	c.RecordOutside(registry.OutsideEffect{Kind: OutsideKindImage, Target: provider, Reference: in.RequestID})
	if len(res.Data) == 0 {
		return nil, providerFailure(ctx, provider, EnvImageAPIKey,
			&malformedResponseError{Provider: provider, Problem: `the answer's "data" array is empty`}, false)
	}

	var agent *string
	if c.Agent != "" {
		agent = &c.Agent
	}
	images := make([]generatedImage, 0, len(res.Data))
	for i, d := range res.Data {
		var data []byte
		var mime, link *string
		switch {
		case d.B64JSON != "":
			data, err = base64.StdEncoding.DecodeString(d.B64JSON)
			if err != nil {
				return nil, providerFailure(ctx, provider, EnvImageAPIKey,
					&malformedResponseError{Provider: provider, Problem: fmt.Sprintf("image %d's b64_json is not base64: %v", i, err)}, false)
			}
			m := http.DetectContentType(data)
			mime = &m
		case d.URL != "":
			link = &d.URL
		default:
			return nil, providerFailure(ctx, provider, EnvImageAPIKey,
				&malformedResponseError{Provider: provider, Problem: fmt.Sprintf("image %d has neither b64_json nor url", i)}, false)
		}
		img := generatedImage{Ordinal: i, MIMEType: mime, URL: link, RevisedPrompt: nonEmpty(d.RevisedPrompt)}
		err = c.DB.QueryRow(ctx, `INSERT INTO generated_images
				(request_id, agent, prompt, revised_prompt, model, size, ordinal, url, mime_type, data)
			VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, $8, $9, $10)
			RETURNING id, bytes, sha256`,
			in.RequestID, agent, in.Prompt, img.RevisedPrompt, cfg.Model, in.Size, i, link, mime, data).
			Scan(&img.ImageID, &img.Bytes, &img.SHA256)
		if err != nil {
			return nil, err
		}
		images = append(images, img)
	}
	return map[string]any{"request_id": in.RequestID, "model": cfg.Model, "images": images, "count": len(images)}, nil
}
