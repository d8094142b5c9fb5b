// Package migrations is the core's migration line: GEM's own tables, functions and built-in rows, in goose's
// SQL format (docs/packs.md says how the packs' lines run beside it). Add a migration as the next numbered
// file; never edit one that has shipped.
package migrations

import "embed"

// FS holds the core line's migration files.
//
//go:embed *.sql
var FS embed.FS
