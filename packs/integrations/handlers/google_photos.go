package integrationshandlers

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gemhq/gem/executor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

type importLinksInput struct {
	Links []string `json:"links"`
	Notes *string  `json:"notes"`
}

type photoSource struct {
	SourceID uuid.UUID `json:"source_id"`
	URL      string    `json:"url"`
	Created  bool      `json:"created"`
}

type importLinksOutput struct {
	SourceIDs []uuid.UUID   `json:"source_ids"`
	Sources   []photoSource `json:"sources"`
	Created   int           `json:"created"`
	Existing  int           `json:"existing"`
}

// googlePhotosHosts are the hosts of Google Photos share links: short links (photos.app.goo.gl/...) and
// album, photo and share pages (photos.google.com/share/..., /album/..., /photo/...).
var googlePhotosHosts = map[string]bool{"photos.app.goo.gl": true, "photos.google.com": true}

// normalizePhotoLink checks that link is a Google Photos share link and returns it in one spelling (https,
// lower-case host, no fragment; the query stays, as a share page's key is in it).
func normalizePhotoLink(link string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(link))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%q is not a URL", link)
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	if !googlePhotosHosts[host] || u.Port() != "" {
		return "", fmt.Errorf("%q is not a Google Photos share link (photos.app.goo.gl or photos.google.com)", link)
	}
	if strings.Trim(u.Path, "/") == "" {
		return "", fmt.Errorf("%q names no album or photo", link)
	}
	u.Scheme, u.Host, u.Fragment, u.User = "https", host, "", nil
	return u.String(), nil
}

// importPhotoLinks records Google Photos share links as media sources. A link already recorded keeps its
// row (and its notes); the result lists every link's source id in the order given, once per link.
func importPhotoLinks(ctx context.Context, c *executor.Call, in importLinksInput) (*importLinksOutput, error) {
	if len(in.Links) == 0 {
		return nil, executor.Invalid("links is empty: give at least one Google Photos share link")
	}
	var links, problems []string
	seen := map[string]bool{}
	for _, l := range in.Links {
		n, err := normalizePhotoLink(l)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !seen[n] {
			seen[n] = true
			links = append(links, n)
		}
	}
	if len(problems) > 0 {
		return nil, executor.Invalid("%s; nothing was recorded", strings.Join(problems, "; "))
	}
	var notes *string
	if in.Notes != nil && strings.TrimSpace(*in.Notes) != "" {
		notes = in.Notes
	}
	// Two statements, so a link another call recorded a moment ago (and committed while this insert waited
	// on it) is found by the second.
	rows, err := c.DB.Query(ctx, `INSERT INTO integration_media_sources (provider, url, notes)
		SELECT 'google_photos', link, $2 FROM unnest($1::text[]) AS link
		ON CONFLICT (provider, url) DO NOTHING
		RETURNING url`, links, notes)
	if err != nil {
		return nil, fmt.Errorf("error recording the links: %w", err)
	}
	added, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("error recording the links: %w", err)
	}
	rows, err = c.DB.Query(ctx, `SELECT url, id FROM integration_media_sources
		WHERE provider = 'google_photos' AND url = ANY($1)`, links)
	if err != nil {
		return nil, fmt.Errorf("error reading the recorded links: %w", err)
	}
	ids := map[string]uuid.UUID{}
	var link string
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&link, &id}, func() error { ids[link] = id; return nil }); err != nil {
		return nil, fmt.Errorf("error reading the recorded links: %w", err)
	}
	sources := make([]photoSource, 0, len(links))
	for _, l := range links {
		sources = append(sources, photoSource{SourceID: ids[l], URL: l, Created: slices.Contains(added, l)})
	}
	out := &importLinksOutput{SourceIDs: []uuid.UUID{}, Sources: sources}
	for _, s := range sources {
		out.SourceIDs = append(out.SourceIDs, s.SourceID)
		if s.Created {
			out.Created++
		} else {
			out.Existing++
		}
	}
	return out, nil
}
