package businesshandlers

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry"
	"github.com/stretchr/testify/require"
)

type fileRecorder struct{ files []registry.FileWritten }

func (r *fileRecorder) RecordFile(f registry.FileWritten) { r.files = append(r.files, f) }

// TestPDFDocText renders a document and reads it back with poppler's pdftotext, an independent PDF reader.
func TestPDFDocText(t *testing.T) {
	p := &pack{files: filestore.New(t.TempDir())}
	build := func() *pdfDoc {
		d := newPDFDoc("Quote Q-0042", time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
		d.fields([2]string{"Customer", "Zoë O'Brien"}, [2]string{"Site", "12 Wattle St, Newtown"}, [2]string{"Empty", ""})
		d.heading("Line items")
		d.table([]string{"Description", "Qty", "Amount"}, []float64{120, 20, 40}, []string{"L", "R", "R"},
			[][]string{{"Replace 40 broken ridge tiles and repoint the whole ridge line with flexible pointing", "40", "$1,840.00"}})
		d.para("Total (incl. GST) $2,024.00")
		return d
	}
	rec := &fileRecorder{}
	f, err := p.storePDF(rec, build(), "quote.pdf")
	require.NoError(t, err)
	require.Equal(t, []registry.FileWritten{f}, rec.files)
	again, err := p.storePDF(rec, build(), "quote.pdf")
	require.NoError(t, err)
	require.Equal(t, f.Ref, again.Ref, "the same document renders to the same bytes")

	path, err := p.files.Path(f.Ref)
	require.NoError(t, err)
	text := pdfText(t, path)
	for _, want := range []string{"Quote Q-0042", "Zoë O'Brien", "12 Wattle St, Newtown", "repoint the whole ridge", "$1,840.00", "Total (incl. GST) $2,024.00"} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, "Empty")
}

// pdfText extracts a PDF's text with pdftotext (Debian's poppler-utils, which .ci/run installs).
func pdfText(t *testing.T, path string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.txt")
	cmd := exec.Command("pdftotext", "-layout", "-enc", "UTF-8", path, out)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "pdftotext: %s", b)
	text, err := os.ReadFile(out)
	require.NoError(t, err)
	return string(text)
}
