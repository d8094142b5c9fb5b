package remote

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	"github.com/stretchr/testify/require"
)

// convertWith converts a structured answer under an output schema and guess threshold, and returns the
// result as JSON (its files are staged, not written: the executor writes them).
func convertWith(t *testing.T, schema string, guessMin int, answer any) string {
	t.Helper()
	store := filestore.New(t.TempDir())
	p := &payloads{store: store, call: &executor.Call{}, tool: "t", schema: compileOutputSchema(json.RawMessage(schema)), guessMin: guessMin}
	out, err := p.structured(answer)
	require.NoError(t, err)
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// TestBinaryRecognition: which strings of structuredContent are files, by the output schema's declarations
// (followed through $ref, anyOf, items and additionalProperties), by shape, and by the conservative guess.
func TestBinaryRecognition(t *testing.T) {
	t.Parallel()
	small := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n tiny"))
	ref := func(data []byte, ext string) string {
		f, err := filestore.New(t.TempDir()).Prepare("", ext, "", data)
		require.NoError(t, err)
		return f.Ref
	}
	png := []byte("\x89PNG\r\n\x1a\n tiny")

	declarations := map[string]string{
		"contentEncoding":  `{"properties": {"f": {"type": "string", "contentEncoding": "base64"}}}`,
		"base64url":        `{"properties": {"f": {"type": "string", "contentEncoding": "base64url"}}}`,
		"format byte":      `{"properties": {"f": {"type": "string", "format": "byte"}}}`,
		"contentMediaType": `{"properties": {"f": {"type": "string", "contentMediaType": "image/png"}}}`,
		"$ref":             `{"$defs": {"bin": {"type": "string", "contentEncoding": "base64"}}, "properties": {"f": {"$ref": "#/$defs/bin"}}}`,
		"anyOf":            `{"properties": {"f": {"anyOf": [{"type": "null"}, {"type": "string", "contentEncoding": "base64"}]}}}`,
		"additional":       `{"additionalProperties": {"type": "string", "contentEncoding": "base64"}}`,
	}
	for name, schema := range declarations {
		out := convertWith(t, schema, 0, map[string]any{"f": small})
		require.JSONEq(t, `{"f": "`+ref(png, ".png")+`"}`, out, name)
	}
	// Items of an array, and a media type the schema gives.
	out := convertWith(t, `{"properties": {"pages": {"items": {"type": "string", "contentEncoding": "base64", "contentMediaType": "application/pdf"}}}}`,
		0, map[string]any{"pages": []any{small}})
	require.JSONEq(t, `{"pages": ["`+ref(png, ".pdf")+`"]}`, out)
	// Text media types are the string itself, and an undeclared short string is left alone.
	out = convertWith(t, `{"properties": {"f": {"type": "string", "contentMediaType": "text/csv"}}}`, Base64MinBytesDefault, map[string]any{"f": small, "g": small})
	require.JSONEq(t, `{"f": "`+small+`", "g": "`+small+`"}`, out)
	// Declared but not base64: left as it is.
	out = convertWith(t, declarations["contentEncoding"], 0, map[string]any{"f": "not base64!"})
	require.JSONEq(t, `{"f": "not base64!"}`, out)

	// A data URL and MCP-shaped objects, whatever their size.
	out = convertWith(t, `{}`, 0, map[string]any{"u": "data:image/png;base64," + small,
		"img": map[string]any{"type": "image", "mimeType": "image/png", "data": small},
		"res": map[string]any{"uri": "file:///a/b/report.pdf", "blob": small}})
	require.JSONEq(t, `{"u": "`+ref(png, ".png")+`", "img": {"type": "image", "mimeType": "image/png", "data": "`+ref(png, ".png")+`"},
		"res": {"uri": "file:///a/b/report.pdf", "blob": "`+ref(png, ".png")+`"}}`, out, "an undeclared blob's type is sniffed")

	// The guess: long base64 of a file is one (MIME line breaks too); hex, base32, digits and DNA are not.
	data := randomBytes(t, 20_000)
	b64 := base64.StdEncoding.EncodeToString(data)
	var mimeLines strings.Builder
	for i := 0; i < len(b64); i += 76 {
		mimeLines.WriteString(b64[i:min(i+76, len(b64))] + "\r\n")
	}
	notFiles := map[string]string{
		"hex":    hex.EncodeToString(data),
		"Hex":    mixedCase(hex.EncodeToString(data)),
		"base32": base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(data),
		"digits": strings.Repeat("0123456789", 3000),
		"dna":    strings.Repeat("ACGTTGCA", 4000),
		"spaces": strings.Repeat("a sentence of words ", 2000),
	}
	for name, s := range notFiles {
		require.False(t, looksLikeBase64File(s, Base64MinBytesDefault), name)
	}
	for _, s := range []string{b64, base64.RawURLEncoding.EncodeToString(data), mimeLines.String()} {
		require.True(t, looksLikeBase64File(s, Base64MinBytesDefault))
		out := convertWith(t, `{}`, Base64MinBytesDefault, map[string]any{"x": s})
		require.JSONEq(t, `{"x": "`+ref(data, ".bin")+`"}`, out, "the bytes, named by their SHA-256")
	}
	require.False(t, looksLikeBase64File(b64, 0), "0 turns the guess off")
	require.False(t, looksLikeBase64File(b64[:1000], Base64MinBytesDefault), "shorter than the threshold")

	// A failed call keeps nothing and says what it dropped.
	p := &payloads{store: filestore.New(t.TempDir()), tool: "t", guessMin: Base64MinBytesDefault}
	failed, err := p.structured(map[string]any{"x": "data:image/png;base64," + small})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"x": "(image/png, 13 bytes, not kept: the call failed)"}, failed)
}

// mixedCase upper-cases every other letter of s.
func mixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

func TestBase64MinBytesVariable(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == EnvBase64MinBytes {
				return v
			}
			return ""
		}
	}
	n, err := base64MinBytes(env(""))
	require.NoError(t, err)
	require.Equal(t, Base64MinBytesDefault, n)
	n, err = base64MinBytes(env("0"))
	require.NoError(t, err)
	require.Zero(t, n)
	for _, bad := range []string{"-1", "16k", "lots"} {
		_, err = base64MinBytes(env(bad))
		require.ErrorContains(t, err, EnvBase64MinBytes)
	}
	_, err = Register(t.Context(), nil, executor.Handlers{}, Options{Getenv: env("16k")})
	require.ErrorContains(t, err, EnvBase64MinBytes, "the executor does not start with a bad value")
}

func TestFileNamesAndTypes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "photo.png", fileName(map[string]any{"name": "photo.png"}, "t", "/data"))
	require.Equal(t, "report.pdf", fileName(map[string]any{"uri": "file:///x/report.pdf"}, "t", "/blob"))
	require.Equal(t, "etc_passwd", fileName(map[string]any{"name": "../../etc/passwd"}, "t", "/data"))
	require.Equal(t, "shot-page-0-image", fileName(nil, "shot", "/page/0/image"))
	require.Equal(t, ".jpg", extensionOf("image/jpeg"))
	require.Equal(t, ".bin", extensionOf("application/x-unknown-thing"))
	require.Equal(t, "image/png", mediaTypeOf("", []byte("\x89PNG\r\n\x1a\nrest")))
	require.Equal(t, "application/pdf", mediaTypeOf("not a type", []byte("%PDF-1.7\n")))
	require.Equal(t, "image/webp", mediaTypeOf("IMAGE/WebP; q=1", nil))
}
