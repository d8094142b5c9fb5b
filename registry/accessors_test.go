package registry

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAccessorsHandOutCopies: whatever a caller does to what an accessor returned (filter it in place, sort
// it, overwrite it) no other reader sees; nor does a change to what it gave SetDeviceTools. The brain's studio
// filtered Tools() in place with slices.DeleteFunc, and every later reader met nil tools.
func TestAccessorsHandOutCopies(t *testing.T) {
	t.Parallel()
	r, err := Load(repoRegistry)
	require.NoError(t, err)
	want := toolNames(r.Tools())
	ownWant := toolNames(r.OwnTools())

	spoil := func(tools []*Tool) {
		_ = slices.DeleteFunc(tools, func(t *Tool) bool { return t.Domain() != "invoice" }) // zeroes the tail
		slices.Reverse(tools)
		if len(tools) > 0 {
			tools[0] = nil
		}
	}
	spoil(r.Tools())
	spoil(r.OwnTools())
	require.Equal(t, want, toolNames(r.Tools()))
	require.Equal(t, ownWant, toolNames(r.OwnTools()))
	require.Equal(t, len(want), r.Len())

	device := secretTool(t, "lab.vault")
	servedBy := map[string][]string{"lab.vault": {"laptop", "phone"}, "os.create_note": {"laptop"}}
	r.SetDeviceTools([]*Tool{device}, servedBy)
	servedBy["lab.vault"][0] = "intruder"
	servedBy["os.create_note"] = nil
	withDevice := append(slices.Clone(want), "lab.vault")
	slices.Sort(withDevice)
	spoil(r.Tools())
	require.Equal(t, withDevice, toolNames(r.Tools()))
	require.Equal(t, ownWant, toolNames(r.OwnTools()))

	devices := r.ServedBy("lab.vault")
	require.Equal(t, []string{"laptop", "phone"}, devices)
	devices[0] = "intruder"
	require.Equal(t, []string{"laptop", "phone"}, r.ServedBy("lab.vault"))
	require.Equal(t, []string{"laptop"}, r.ServedBy("os.create_note"))

	paths := device.SecretPaths()
	paths[0][0] = "nothing"
	require.ElementsMatch(t, [][]string{{"password"}, {"account", "pin"}, {"cards", "*", "cvv"}}, device.SecretPaths())
	props := device.InputProperties()
	props[0] = "zzz"
	require.True(t, device.HasInputProperty("account"))
	require.Equal(t, []string{"account", "cards", "password", "phone"}, device.InputProperties())
}

func toolNames(tools []*Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}
