// Package callstate is the engine's side of a gemcall.Call and a gemcall.Error: what a handler records
// through its call (effects outside the database, files) and what the engine gives it (Invoke), which the
// tool author's surface keeps unexported. Package gemcall sets the hooks at init; it imports this package,
// so they cannot name its types here (the way grpc's internal package reaches into grpc).
package callstate

import (
	"context"
	"encoding/json"

	"github.com/gemhq/gem/executor/filestore"
	"github.com/gemhq/gem/registry"
)

// State is what a call keeps for the engine.
type State struct {
	Outside []registry.OutsideEffect
	Files   []registry.FileWritten
	Staged  []*filestore.File
	// Invoke makes a call from inside this one (nil: calls cannot be made from here).
	Invoke func(ctx context.Context, tool string, input json.RawMessage) (json.RawMessage, string, error)
}

// WriteStaged writes the staged files and returns every file of the receipt.
func (s *State) WriteStaged() ([]registry.FileWritten, error) {
	files := s.Files
	for _, f := range s.Staged {
		if err := f.Write(); err != nil {
			return nil, err
		}
		files = append(files, f.FileWritten)
	}
	return files, nil
}

// Set by package gemcall.
var (
	// Of is a func(*gemcall.Call) *State: the call's state.
	Of any
	// Retryable is a func(*gemcall.Error) bool: whether the error was made by Retryable.
	Retryable any
)
