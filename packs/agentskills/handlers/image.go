package agentskillshandlers

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/gemhq/gem/executor"
	agentskillspack "github.com/gemhq/gem/packs/agentskills"
	"github.com/gemhq/gem/registry"
)

const (
	// maxImageAnswerBytes bounds an image provider's answer (base64 images are large).
	maxImageAnswerBytes = 128 << 20
	// OutsideKindImage is the kind of the outside effect image.generate records.
	OutsideKindImage = "image_generation"
)

// imageNotConfigured returns the not_configured error for a missing image provider configuration, or nil.
func imageNotConfigured(c agentskillspack.ImageConfig, tool string) error {
	required := []string{agentskillspack.EnvImageAPIKey, agentskillspack.EnvImageModel}
	var missing []string
	if c.APIKey == "" {
		missing = append(missing, agentskillspack.EnvImageAPIKey)
	}
	if c.Model == "" {
		missing = append(missing, agentskillspack.EnvImageModel)
	}
	if len(missing) == 0 {
		return nil
	}
	return executor.NotConfigured(
		fmt.Sprintf("%s needs an image provider, and none is configured: %s not set", tool, strings.Join(missing, " and ")),
		required,
		fmt.Sprintf("Set %s to the provider's API key and %s to an image model (for example gpt-image-1 or dall-e-3).", agentskillspack.EnvImageAPIKey, agentskillspack.EnvImageModel),
		fmt.Sprintf("Set %s to the base URL of an OpenAI Images API compatible provider (default %s; requests go to {base}/images/generations).", agentskillspack.EnvImageURL, agentskillspack.DefaultImageURL),
		"Restart the executor: it reads the configuration once, at start.",
	)
}

// generateImage asks the image provider for images (OpenAI Images API: POST {base}/images/generations) and
// keeps them in generated_images. It costs money, so it runs once per call (the executor guarantees it) and
// once per request_id (the tool is keyed on it); a failed provider request is never retried automatically.
func (p *pack) generateImage(ctx context.Context, c *executor.Call, in agentskillspack.GenerateImageInput) (*agentskillspack.GenerateImageOutput, error) {
	cfg := p.cfg.Image
	if err := imageNotConfigured(cfg, c.Tool.Name); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, executor.Invalid("prompt is blank")
	}
	if in.N <= 0 {
		in.N = 1
	}
	base, err := cfg.BaseURL()
	if err != nil {
		return nil, executor.NotConfigured(err.Error(), []string{agentskillspack.EnvImageURL},
			fmt.Sprintf("Set %s to the provider's base URL, such as %s.", agentskillspack.EnvImageURL, agentskillspack.DefaultImageURL))
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
		return nil, providerFailure(ctx, provider, agentskillspack.EnvImageAPIKey, err, false)
	}
	c.RecordOutside(registry.OutsideEffect{Kind: OutsideKindImage, Target: provider, Reference: in.RequestID})
	if len(res.Data) == 0 {
		return nil, providerFailure(ctx, provider, agentskillspack.EnvImageAPIKey,
			&malformedResponseError{Provider: provider, Problem: `the answer's "data" array is empty`}, false)
	}

	var agent *string
	if c.Agent != "" {
		agent = &c.Agent
	}
	images := make([]agentskillspack.GeneratedImage, 0, len(res.Data))
	for i, d := range res.Data {
		var data []byte
		var mime, link *string
		switch {
		case d.B64JSON != "":
			data, err = base64.StdEncoding.DecodeString(d.B64JSON)
			if err != nil {
				return nil, providerFailure(ctx, provider, agentskillspack.EnvImageAPIKey,
					&malformedResponseError{Provider: provider, Problem: fmt.Sprintf("image %d's b64_json is not base64: %v", i, err)}, false)
			}
			m := http.DetectContentType(data)
			mime = &m
		case d.URL != "":
			link = &d.URL
		default:
			return nil, providerFailure(ctx, provider, agentskillspack.EnvImageAPIKey,
				&malformedResponseError{Provider: provider, Problem: fmt.Sprintf("image %d has neither b64_json nor url", i)}, false)
		}
		img := agentskillspack.GeneratedImage{Ordinal: i, MIMEType: mime, URL: link, RevisedPrompt: nonEmpty(d.RevisedPrompt)}
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
	return &agentskillspack.GenerateImageOutput{RequestID: in.RequestID, Model: cfg.Model, Images: images, Count: len(images)}, nil
}
