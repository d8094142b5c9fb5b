package registry

import (
	"testing"
)

func TestGrants(t *testing.T) {
	g := Grants{"read:*", "send:sms", "admin"}
	for p, want := range map[string]bool{
		"read:db": true, "read:files": true, "send:sms": true, "admin": true,
		"send:email": false, "write:db": false, "read": false, "readx:db": false, "approve": false,
	} {
		if got := g.Allows(p); got != want {
			t.Errorf("Allows(%q) = %v, want %v", p, got, want)
		}
	}
	if got := g.Missing([]string{"read:db", "write:db", "send:email"}); len(got) != 2 || got[0] != "write:db" || got[1] != "send:email" {
		t.Errorf("Missing = %v", got)
	}
	if got := (Grants{"*"}).Missing([]string{"write:db", "approve"}); got != nil {
		t.Errorf("* misses %v", got)
	}
	if got := (Grants(nil)).Missing([]string{"read:db"}); len(got) != 1 {
		t.Errorf("no grants miss %v", got)
	}
}

func TestCheckGrant(t *testing.T) {
	for _, ok := range []string{"*", "read:db", "send:*", "call:image_api", "admin", "a:b:c", "a:b:*"} {
		if err := CheckGrant(ok); err != nil {
			t.Errorf("CheckGrant(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Read:db", "read db", "**", "read:**", "*:db", "read:", ":db", "re*d"} {
		if CheckGrant(bad) == nil {
			t.Errorf("CheckGrant(%q) accepted", bad)
		}
	}
	if CheckGrants([]string{"read:db", "read:db"}) == nil {
		t.Error("a repeated grant was accepted")
	}
}
