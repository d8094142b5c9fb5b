// Package legacy holds the migrations made before the migration lines began (README.md): frozen, run only to
// bring a database they made to their end before the lines adopt it.
package legacy

import "embed"

// Migrations holds the legacy migration files, under migrations/.
//
//go:embed migrations/*.sql
var Migrations embed.FS
