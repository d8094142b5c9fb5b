// Package phone reads phone numbers as people type them into one form, E.164 (+61499000111), with
// libphonenumber's rules (github.com/nyaruka/phonenumbers): "+61 499 000 111", "0499 000 111", "(04) 9900
// 0111" and "0061 499 000 111" are one number. A number without a country code is read in a default region
// (GEM_PHONE_REGION, AU unless set). The executor keys leads and sends SMS with it; the brain's rules planner
// reads numbers in messages with it, so both agree on what a number is.
package phone

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

const (
	// EnvRegion is the variable naming the region numbers without a country code are read in.
	EnvRegion = "GEM_PHONE_REGION"
	// EnvCallingCode is what EnvRegion replaces: the calling code given to numbers without one (the
	// executor's GEM_SMS_DEFAULT_COUNTRY_CODE, once for SMS alone). Still read; when both are set they must agree.
	EnvCallingCode = "GEM_SMS_DEFAULT_COUNTRY_CODE"
	// RegionDefault is that region unless EnvRegion says otherwise.
	RegionDefault = "AU"
	// maxTyped is the longest text read as a phone number.
	maxTyped = 40
)

// Region returns the region numbers are read in from the environment: EnvRegion, else the region of the
// deprecated EnvCallingCode, else RegionDefault (see ResolveRegion).
func Region(getenv func(string) string) (string, error) {
	return ResolveRegion(getenv(EnvRegion), getenv(EnvCallingCode))
}

// ResolveRegion is the region numbers are read in, given EnvRegion's value and EnvCallingCode's ("" when
// unset): the region (upper-cased), else the main region of the calling code, else RegionDefault. An unknown
// region or calling code, or a calling code that is not the region's, is an error naming the variables.
func ResolveRegion(region, callingCode string) (string, error) {
	region = strings.ToUpper(strings.TrimSpace(region))
	if code := strings.TrimPrefix(strings.TrimSpace(callingCode), "+"); code != "" {
		switch {
		case RegionOfCallingCode(code) == "":
			return "", fmt.Errorf("%s=%q is no country's calling code; unset it and set %s to a region such as AU", EnvCallingCode, code, EnvRegion)
		case region == "":
			region = RegionOfCallingCode(code)
		case CallingCode(region) != code:
			return "", fmt.Errorf("%s=%q and %s=%q disagree; unset %s, which %s replaces", EnvCallingCode, code, EnvRegion, region,
				EnvCallingCode, EnvRegion)
		}
	}
	if region == "" {
		return RegionDefault, nil
	}
	return region, CheckRegion(region)
}

// CheckRegion reports whether numbers can be read in region: a two-letter region code libphonenumber knows
// ("AU", "NZ", "GB", "US").
func CheckRegion(region string) error {
	if !phonenumbers.GetSupportedRegions()[region] {
		return fmt.Errorf("%s=%q is not a region phone numbers can be read in: give a two-letter code such as AU, NZ, GB or US", EnvRegion, region)
	}
	return nil
}

// CallingCode is the country calling code of a region ("AU" → "61"), or "" for an unknown region.
func CallingCode(region string) string {
	if n := phonenumbers.GetCountryCodeForRegion(region); n > 0 {
		return strconv.Itoa(n)
	}
	return ""
}

// RegionOfCallingCode is the main region of a country calling code ("61" → AU), or "" when there is none.
func RegionOfCallingCode(code string) string {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(code), "+"))
	if err != nil {
		return ""
	}
	if r := phonenumbers.GetRegionCodeForCountryCode(n); r != "ZZ" {
		return r
	}
	return ""
}

// Digits is s with everything but its ASCII digits dropped ("(04) 9900-0111" → 0499000111).
func Digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// Number is a phone number read from what was typed.
type Number struct {
	// Typed is the text as given, trimmed: what people see.
	Typed string
	// E164 is the number in E.164 form: what it is keyed and sent by.
	E164 string
	// National is its national significant number ("499000111"): the digits every way of writing it contains.
	National string
	// Region is the region it was read in.
	Region string
}

// Error says why a text is not a phone number. Its message is for people.
type Error struct {
	Typed, Region, Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%q is not a phone number (%s); a number without a country code is read as a number of %s (%s)",
		e.Typed, e.Reason, e.Region, EnvRegion)
}

// Parse reads a phone number as people type it: international ("+61 499 000 111", "0061 499 000 111") or
// national in region ("0499 000 111", "(04) 9900 0111"). A text that is not a number libphonenumber knows to
// be in use (too short, too long, no such range, an unknown country code) is an *Error.
func Parse(typed, region string) (Number, error) {
	typed = strings.TrimSpace(typed)
	fail := func(reason string) (Number, error) {
		return Number{}, &Error{Typed: typed, Region: region, Reason: reason}
	}
	if len(typed) > maxTyped {
		return fail(fmt.Sprintf("longer than %d characters", maxTyped))
	}
	num, err := phonenumbers.Parse(typed, region)
	if digits := phonenumbers.NormalizeDigitsOnly(typed); strings.HasPrefix(digits, "00") && (err != nil || !phonenumbers.IsValidNumber(num)) {
		// 00 starts an international number in most of the world, also where it is not the region's own
		// prefix (Australia dials 0011): "0061 499 000 111" is +61 499 000 111.
		if intl, ierr := phonenumbers.Parse("+"+digits[2:], region); ierr == nil && phonenumbers.IsValidNumber(intl) {
			num, err = intl, nil
		}
	}
	switch {
	case errors.Is(err, phonenumbers.ErrInvalidCountryCode):
		return fail("no country has its calling code")
	case errors.Is(err, phonenumbers.ErrTooShortNSN), errors.Is(err, phonenumbers.ErrTooShortAfterIDD):
		return fail("too few digits")
	case errors.Is(err, phonenumbers.ErrNumTooLong):
		return fail("too many digits")
	case err != nil:
		return fail("no digits to read")
	}
	if !phonenumbers.IsValidNumber(num) {
		switch phonenumbers.IsPossibleNumberWithReason(num) {
		case phonenumbers.TOO_SHORT:
			return fail("too few digits")
		case phonenumbers.TOO_LONG:
			return fail("too many digits")
		case phonenumbers.IS_POSSIBLE_LOCAL_ONLY:
			return fail("a local number: add its area code")
		case phonenumbers.INVALID_COUNTRY_CODE:
			return fail("no country has its calling code")
		default:
			return fail("no number in use looks like it: check the digits and the area code")
		}
	}
	return Number{Typed: typed, E164: phonenumbers.Format(num, phonenumbers.E164),
		National: phonenumbers.GetNationalSignificantNumber(num), Region: region}, nil
}

// StoredDigits are the digits (with a leading + when international) the number has when written the ways
// people write it — national with its trunk prefix, international with + or with 00 — for finding rows
// stored before numbers were kept in E.164, by their digits alone.
func (n Number) StoredDigits() []string {
	code := strings.TrimPrefix(n.E164, "+")
	code = code[:len(code)-len(n.National)]
	out := []string{n.E164, "00" + code + n.National, n.National}
	if p := phonenumbers.GetNddPrefixForRegion(RegionOfCallingCode(code), true); p != "" {
		out = append(out, p+n.National)
	}
	return out
}
