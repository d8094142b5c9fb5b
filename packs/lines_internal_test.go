package packs

import "testing"

// TestOnlyTheLegacyLinesAreAdopted: the lines that began with the legacy migrations' end are adopted by a
// database those made (FromLegacy 1); a pack's line added after them runs from its first migration there,
// or its tables would never be made on such a database.
func TestOnlyTheLegacyLinesAreAdopted(t *testing.T) {
	for _, l := range Lines() {
		if l.FromLegacy != 1 {
			t.Errorf("the %s line began with the legacy migrations' end but has FromLegacy %d", l.Name, l.FromLegacy)
		}
	}
	if later := line("later", "os/migrations"); later.FromLegacy != 0 {
		t.Errorf("a pack's line added after the legacy migrations has FromLegacy %d: its first migration would never run on a database they made", later.FromLegacy)
	}
}
