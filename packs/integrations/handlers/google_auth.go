package integrationshandlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	integrationspack "github.com/gemhq/gem/packs/integrations"
)

// googleTokens hands out Google OAuth access tokens: the fixed one configured, or ones minted from the
// refresh token (the refresh_token grant of RFC 6749, section 6), kept until a minute before they expire.
type googleTokens struct {
	cfg    integrationspack.GoogleConfig
	client *http.Client

	mu      sync.Mutex
	token   string
	expires time.Time
}

// configured reports whether some way to get a token is set.
func (g *googleTokens) configured() bool { return g.cfg.AccessToken != "" || g.refreshes() }

func (g *googleTokens) refreshes() bool {
	return g.cfg.ClientID != "" && g.cfg.ClientSecret != "" && g.cfg.RefreshToken != ""
}

// urlNotConfigured answers not_configured when a Google address a tool requests cannot be used: the token
// endpoint (when a refresh token is exchanged) or the API's, name's value.
func (g *googleTokens) urlNotConfigured(name, value string) error {
	if g.refreshes() {
		if err := urlNotConfigured(integrationspack.EnvGoogleOAuthTokenURL, g.cfg.TokenURL); err != nil {
			return err
		}
	}
	return urlNotConfigured(name, value)
}

// googleCredentialEnv are the variables of either way to authenticate, for not_configured receipts.
var googleCredentialEnv = []string{integrationspack.EnvGoogleAccessToken, integrationspack.EnvGoogleOAuthClientID, integrationspack.EnvGoogleOAuthClientSecret, integrationspack.EnvGoogleOAuthRefreshToken}

// googleCredentialSteps says how to give GEM Google credentials.
const googleCredentialSteps = "Set " + integrationspack.EnvGoogleOAuthClientID + ", " + integrationspack.EnvGoogleOAuthClientSecret + " and " + integrationspack.EnvGoogleOAuthRefreshToken +
	" (an OAuth client and a refresh token granted the scopes of the tools used), or " + integrationspack.EnvGoogleAccessToken + " to a short-lived access token."

// accessToken returns a token to send as Authorization: Bearer.
func (g *googleTokens) accessToken(ctx context.Context) (string, error) {
	if !g.refreshes() {
		return g.cfg.AccessToken, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.token != "" && time.Now().Before(g.expires) {
		return g.token, nil
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}
	err := do(ctx, g.client, apiRequest{
		provider: "Google OAuth", method: http.MethodPost, url: g.cfg.TokenURL,
		form: url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.cfg.RefreshToken},
			"client_id": {g.cfg.ClientID}, "client_secret": {g.cfg.ClientSecret}},
		errorMessage: oauthErrorMessage,
	}, &tok)
	if pe, ok := asProviderError(err); ok && pe.Status == http.StatusBadRequest {
		// invalid_grant and invalid_client come back as 400: the credentials, not the request, are wrong.
		pe.Status = http.StatusUnauthorized
		return "", pe
	}
	if err != nil {
		return "", err
	}
	if tok.AccessToken == "" {
		return "", errors.New("Google's token endpoint answered without an access_token")
	}
	g.token = tok.AccessToken
	g.expires = time.Now().Add(time.Duration(tok.ExpiresIn)*time.Second - time.Minute)
	return g.token, nil
}

// oauthErrorMessage reads an OAuth 2.0 error body: {"error": "invalid_grant", "error_description": "..."}.
func oauthErrorMessage(raw []byte) string {
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Error == "" {
		return ""
	}
	if body.Description != "" {
		return fmt.Sprintf("%s: %s", body.Error, body.Description)
	}
	return body.Error
}
