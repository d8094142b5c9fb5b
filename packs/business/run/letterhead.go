package businessrun

import "strings"

// BusinessNameDefault is the business's name on documents unless GEM_BUSINESS_NAME says otherwise.
const BusinessNameDefault = "GEM Roofing"

// Environment variables of the letterhead, read by ConfigFromEnv.
const (
	EnvBusinessName    = "GEM_BUSINESS_NAME"
	EnvBusinessABN     = "GEM_BUSINESS_ABN"
	EnvBusinessPhone   = "GEM_BUSINESS_PHONE"
	EnvBusinessEmail   = "GEM_BUSINESS_EMAIL"
	EnvBusinessAddress = "GEM_BUSINESS_ADDRESS"
)

// Letterhead is the business as its documents (quote PDFs) and customer messages name it. Empty details
// are left off.
type Letterhead struct {
	// Name is the trading name. Defaults to BusinessNameDefault.
	Name string
	// ABN is the Australian Business Number, printed on quotes when set. No default.
	ABN string
	// Phone is the number customers call. No default.
	Phone string
	// Email is the address customers write to. No default.
	Email string
	// Address is the business's postal or street address. No default.
	Address string
}

func letterheadFromEnv(get func(string) string) Letterhead {
	return Letterhead{
		Name: get(EnvBusinessName), ABN: get(EnvBusinessABN), Phone: get(EnvBusinessPhone),
		Email: get(EnvBusinessEmail), Address: get(EnvBusinessAddress),
	}
}

// withDefaults returns the letterhead with the default name in place of an empty one.
func (l Letterhead) withDefaults() Letterhead {
	if strings.TrimSpace(l.Name) == "" {
		l.Name = BusinessNameDefault
	}
	return l
}
