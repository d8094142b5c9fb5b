// Package filestore is GEM's file store: the documents tools make (quote PDFs, job cards, warranty
// certificates, website packs) are kept in one directory, each under the SHA-256 of its content. A file's
// ref ("gemfs://<sha256>.pdf") is what tools return and receipts list; writing the same bytes again (a
// retried call) gives the same ref and changes nothing, so a file write is safe to repeat.
package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gemhq/gem/registry"
)

// EnvDir names the directory of the file store.
const EnvDir = "GEM_FILE_STORE"

// DefaultDir is the file store's directory when EnvDir is unset, relative to the working directory.
const DefaultDir = ".gem/files"

// Scheme starts every ref of the store.
const Scheme = "gemfs://"

// nameRe is a stored file's name: the hex SHA-256 of its content and an extension.
var nameRe = regexp.MustCompile(`^[0-9a-f]{64}(\.[a-z0-9]{1,8})?$`)

// Store is a file store in a directory. It is safe for concurrent use, also by several processes.
type Store struct {
	dir string
}

// New returns the store in dir (created on the first write).
func New(dir string) *Store { return &Store{dir: dir} }

// FromEnv returns the store EnvDir names, or the one in DefaultDir.
func FromEnv(getenv func(string) string) *Store {
	if dir := strings.TrimSpace(getenv(EnvDir)); dir != "" {
		return New(dir)
	}
	return New(DefaultDir)
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Put stores data under its content's hash with the extension ext (".pdf") and describes it: name is the
// file's name for people and contentType its media type. A file that is already there is left alone.
func (s *Store) Put(name, ext, contentType string, data []byte) (registry.FileWritten, error) {
	f, err := s.Prepare(name, ext, contentType, data)
	if err != nil {
		return registry.FileWritten{}, err
	}
	if err := f.Write(); err != nil {
		return registry.FileWritten{}, err
	}
	return f.FileWritten, nil
}

// File is a file named and described as the store keeps it, written or not yet (see Prepare).
type File struct {
	registry.FileWritten
	store *Store
	data  []byte
}

// Prepare names and describes data as Put would, without writing it: the store names a file by its content,
// so its ref is known before the file exists. Write stores it.
func (s *Store) Prepare(name, ext, contentType string, data []byte) (*File, error) {
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	file := digest + strings.ToLower(ext)
	if !nameRe.MatchString(file) {
		return nil, fmt.Errorf("file store: extension %q is not a short lowercase extension", ext)
	}
	return &File{FileWritten: registry.FileWritten{Ref: Scheme + file, Name: name, ContentType: contentType,
		Bytes: int64(len(data)), SHA256: digest}, store: s, data: data}, nil
}

// Write stores the file, unless it is there already.
func (f *File) Write() error {
	dir := f.store.dir
	file := strings.TrimPrefix(f.Ref, Scheme)
	path := filepath.Join(dir, file)
	if st, err := os.Stat(path); err == nil && st.Size() == f.Bytes {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	// Write a temporary file and rename it, so a reader never sees a partial file.
	tmp, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	_, werr := tmp.Write(f.data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("file store: error writing %s: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("file store: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("file store: error writing %s: %w", file, err)
	}
	return nil
}

// ErrNotInStore is returned for a ref that is not of this store's form or names no stored file.
var ErrNotInStore = errors.New("not a file of GEM's file store")

// Path returns the path of the file a ref names, once checked to be a stored file's name (a ref can never
// reach outside the store's directory).
func (s *Store) Path(ref string) (string, error) {
	file, ok := strings.CutPrefix(ref, Scheme)
	if !ok || !nameRe.MatchString(file) {
		return "", fmt.Errorf("%w: %q", ErrNotInStore, ref)
	}
	path := filepath.Join(s.dir, file)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w: %q (%v)", ErrNotInStore, ref, err)
	}
	return path, nil
}

// Read returns the content of the file a ref names.
func (s *Store) Read(ref string) ([]byte, error) {
	path, err := s.Path(ref)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
