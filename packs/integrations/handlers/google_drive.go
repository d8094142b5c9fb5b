package integrationshandlers

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/gemhq/gem/executor"
	integrationspack "github.com/gemhq/gem/packs/integrations"
)

type driveSearchInput struct {
	Query    string `json:"query"`
	FileType string `json:"file_type"`
	Limit    int    `json:"limit"`
}

type driveFile struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	MimeType     string `json:"mime_type"`
	WebViewLink  string `json:"web_view_link,omitempty"`
	ModifiedTime string `json:"modified_time,omitempty"`
	SizeBytes    *int64 `json:"size_bytes,omitempty"`
}

type driveSearchOutput struct {
	Files      []driveFile `json:"files"`
	DriveQuery string      `json:"drive_query"`
}

// driveFileTypes maps the file types people name to Drive query terms on mimeType.
var driveFileTypes = map[string]string{
	"pdf":          "mimeType = 'application/pdf'",
	"doc":          "mimeType = 'application/vnd.google-apps.document'",
	"document":     "mimeType = 'application/vnd.google-apps.document'",
	"sheet":        "mimeType = 'application/vnd.google-apps.spreadsheet'",
	"spreadsheet":  "mimeType = 'application/vnd.google-apps.spreadsheet'",
	"slides":       "mimeType = 'application/vnd.google-apps.presentation'",
	"presentation": "mimeType = 'application/vnd.google-apps.presentation'",
	"folder":       "mimeType = 'application/vnd.google-apps.folder'",
	"image":        "mimeType contains 'image/'",
	"photo":        "mimeType contains 'image/'",
	"video":        "mimeType contains 'video/'",
}

// driveQuoter escapes a value for a Drive query string literal: a backslash and a single quote are
// escaped with a backslash.
var driveQuoter = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// driveLiteral is s as a quoted Drive query string.
func driveLiteral(s string) string { return "'" + driveQuoter.Replace(s) + "'" }

// buildDriveQuery builds files.list's q from the search text and file type. The text matches file names
// or contents; trashed files are left out.
func buildDriveQuery(text, fileType string) (string, error) {
	terms := []string{"trashed = false"}
	if text = strings.TrimSpace(text); text != "" {
		lit := driveLiteral(text)
		terms = append(terms, "(name contains "+lit+" or fullText contains "+lit+")")
	}
	if ft := strings.ToLower(strings.TrimSpace(fileType)); ft != "" {
		switch term, ok := driveFileTypes[ft]; {
		case ok:
			terms = append(terms, term)
		case strings.Contains(ft, "/"):
			terms = append(terms, "mimeType = "+driveLiteral(ft))
		default:
			known := make([]string, 0, len(driveFileTypes))
			for k := range driveFileTypes {
				known = append(known, k)
			}
			sort.Strings(known)
			return "", executor.Invalid("file_type %q is not a type GEM knows (%s) or a MIME type such as application/pdf", fileType, strings.Join(known, ", "))
		}
	}
	return strings.Join(terms, " and "), nil
}

// driveSearch finds files in Google Drive: files.list (GET /drive/v3/files) with a q built from the query
// and file type, in every drive the credentials reach.
func (p *pack) driveSearch(ctx context.Context, c *executor.Call, in driveSearchInput) (*driveSearchOutput, error) {
	if !p.google.configured() {
		return nil, executor.NotConfigured("Google Drive is not configured: no Google credentials are set", googleCredentialEnv,
			googleCredentialSteps+" The scope needed is https://www.googleapis.com/auth/drive.readonly.")
	}
	if err := p.google.urlNotConfigured(integrationspack.EnvGoogleDriveBaseURL, p.cfg.Google.DriveBaseURL); err != nil {
		return nil, err
	}
	q, err := buildDriveQuery(in.Query, in.FileType)
	if err != nil {
		return nil, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 10
	}
	token, err := p.google.accessToken(ctx)
	if err != nil {
		return nil, readFailure(err, googleCredentialEnv, googleCredentialSteps)
	}
	params := url.Values{
		"q":                         {q},
		"pageSize":                  {strconv.Itoa(limit)},
		"fields":                    {"files(id,name,mimeType,webViewLink,modifiedTime,size)"},
		"supportsAllDrives":         {"true"},
		"includeItemsFromAllDrives": {"true"},
	}
	var list struct {
		Files []struct {
			ID           string `json:"id"`
			Name         string `json:"name"`
			MimeType     string `json:"mimeType"`
			WebViewLink  string `json:"webViewLink"`
			ModifiedTime string `json:"modifiedTime"`
			Size         string `json:"size"`
		} `json:"files"`
	}
	err = do(ctx, p.cfg.HTTPClient, apiRequest{
		provider: "Google Drive", method: http.MethodGet,
		url:          p.cfg.Google.DriveBaseURL + "/drive/v3/files?" + params.Encode(),
		header:       http.Header{"Authorization": {"Bearer " + token}},
		errorMessage: googleErrorMessage,
	}, &list)
	if err != nil {
		return nil, readFailure(err, googleCredentialEnv, googleCredentialSteps,
			"Check that the Drive API is enabled for the OAuth client's project and the token has the drive.readonly scope.")
	}
	out := &driveSearchOutput{Files: []driveFile{}, DriveQuery: q}
	for _, f := range list.Files {
		df := driveFile{ID: f.ID, Name: f.Name, MimeType: f.MimeType, WebViewLink: f.WebViewLink, ModifiedTime: f.ModifiedTime}
		if n, err := strconv.ParseInt(f.Size, 10, 64); err == nil {
			df.SizeBytes = &n
		}
		out.Files = append(out.Files, df)
	}
	return out, nil
}
