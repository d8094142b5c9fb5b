package phone

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, typed := range []string{"+61 499 000 111", "0499000111", "(04) 9900 0111", "0499 000 111", "0061 499 000 111",
		"+61 (0) 499 000 111", "61499000111", " 0499-000-111 ", "+61499000111"} {
		n, err := Parse(typed, "AU")
		require.NoError(t, err, typed)
		require.Equal(t, "+61499000111", n.E164, typed)
		require.Equal(t, "499000111", n.National, typed)
	}
	for typed, e164 := range map[string]string{"(02) 9555 1234": "+61295551234", "+1 (415) 555-0100": "+14155550100",
		"+44 20 7946 0018": "+442079460018", "021 555 0100": "+64215550100"} {
		region := "AU"
		if typed == "021 555 0100" {
			region = "NZ"
		}
		n, err := Parse(typed, region)
		require.NoError(t, err, typed)
		require.Equal(t, e164, n.E164, typed)
	}
	for typed, reason := range map[string]string{
		"0499 000 11": "check the digits", "12": "too few digits", "": "no digits", "abc": "no digits",
		"0499 000 111 222 333": "too many digits", "+999 1234 5678": "calling code", "9555 1234": "area code",
		"0199 000 111": "check the digits", "0499 000 111 0499 000 111 0499 000 111 0499": "longer than 40",
	} {
		_, err := Parse(typed, "AU")
		require.Error(t, err, typed)
		require.ErrorContains(t, err, reason, typed)
		require.ErrorContains(t, err, "GEM_PHONE_REGION", typed)
	}
}

func TestStoredDigits(t *testing.T) {
	t.Parallel()
	n, err := Parse("(04) 9900 0111", "AU")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"+61499000111", "0061499000111", "499000111", "0499000111"}, n.StoredDigits())
}

func TestRegion(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tt := range []struct {
		env  func(string) string
		want string
	}{
		{env(), "AU"},
		{env(EnvRegion, " nz "), "NZ"},
		{env(EnvCallingCode, "+64"), "NZ"},
		{env(EnvRegion, "NZ", EnvCallingCode, "64"), "NZ"},
	} {
		r, err := Region(tt.env)
		require.NoError(t, err)
		require.Equal(t, tt.want, r)
	}
	for _, bad := range []func(string) string{env(EnvRegion, "Australia"), env(EnvCallingCode, "999"), env(EnvRegion, "AU", EnvCallingCode, "64")} {
		_, err := Region(bad)
		require.ErrorContains(t, err, EnvRegion)
	}
	require.Equal(t, "61", CallingCode("AU"))
	require.Equal(t, "AU", RegionOfCallingCode("+61"))
	require.Empty(t, RegionOfCallingCode("999"))
}
