package filestore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gemhq/gem/executor/filestore"
	"github.com/stretchr/testify/require"
)

func TestPutIsContentAddressedAndRepeatable(t *testing.T) {
	s := filestore.New(filepath.Join(t.TempDir(), "files"))
	data := []byte("%PDF-1.4 a quote")
	f, err := s.Put("quote.pdf", ".pdf", "application/pdf", data)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	require.Equal(t, filestore.Scheme+hex.EncodeToString(sum[:])+".pdf", f.Ref)
	require.Equal(t, int64(len(data)), f.Bytes)
	require.Equal(t, "application/pdf", f.ContentType)

	again, err := s.Put("other-name.pdf", ".pdf", "application/pdf", data)
	require.NoError(t, err)
	require.Equal(t, f.Ref, again.Ref)
	entries, err := os.ReadDir(s.Dir())
	require.NoError(t, err)
	require.Len(t, entries, 1, "the same bytes are stored once, with no temporary files left")

	got, err := s.Read(f.Ref)
	require.NoError(t, err)
	require.Equal(t, data, got)
}

func TestRefsCannotLeaveTheStore(t *testing.T) {
	s := filestore.New(t.TempDir())
	for _, ref := range []string{"", "gemfs://../../etc/passwd", "/etc/passwd", "gemfs://" + string(make([]byte, 64)),
		"https://example.com/a.pdf", "gemfs://0000000000000000000000000000000000000000000000000000000000000000.pdf"} {
		_, err := s.Read(ref)
		require.True(t, errors.Is(err, filestore.ErrNotInStore), "ref %q: %v", ref, err)
	}
	_, err := s.Put("x", "/../x", "text/plain", []byte("x"))
	require.Error(t, err)
}

func TestFromEnv(t *testing.T) {
	require.Equal(t, filestore.DefaultDir, filestore.FromEnv(func(string) string { return "" }).Dir())
	require.Equal(t, "/srv/gem", filestore.FromEnv(func(k string) string {
		if k == filestore.EnvDir {
			return "/srv/gem"
		}
		return ""
	}).Dir())
}
