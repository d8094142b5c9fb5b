package packs

import "testing"

// TestOnlyTheLegacyLinesAreAdopted: each line madeByLegacy names is a line, adopted by a database the legacy
// migrations made (FromLegacy 1): a pack renamed without it would run its first migration there, on tables
// that exist. A pack's line added after them runs from its first migration there, or its tables would never
// be made on such a database.
func TestOnlyTheLegacyLinesAreAdopted(t *testing.T) {
	byName := map[string]int64{}
	for _, l := range Lines() {
		byName[l.Name] = l.FromLegacy
	}
	for name := range madeByLegacy {
		if from, ok := byName[name]; !ok || from != 1 {
			t.Errorf("the %s line began with the legacy migrations' end but is not a line with FromLegacy 1 (is a line: %t, FromLegacy %d)", name, ok, from)
		}
	}
	if later := line("later", "os/migrations"); later.FromLegacy != 0 {
		t.Errorf("a pack's line added after the legacy migrations has FromLegacy %d: its first migration would never run on a database they made", later.FromLegacy)
	}
}
