package gemsql

import "github.com/gemhq/gem/registry/phone"

// LeadByPhoneSQL selects columns of the lead of a phone number (LeadByPhoneArgs) from leads, with lock ("FOR
// UPDATE", or ""): the lead keyed by the number's E.164 form (phone_e164), else — the oldest, when the
// number was typed two ways before keys — one stored before leads were keyed, whose digits are one of the
// ways the number is written. Migration 00039 could not key those rows: what region a number typed without
// a country code is in is the executor's to say (GEM_PHONE_REGION), not the database's. leads.create, the
// HighLevel sync and the HighLevel webhook find leads with it.
func LeadByPhoneSQL(columns, lock string) string {
	return `SELECT ` + columns + ` FROM leads
		WHERE phone_e164 = $1 OR (phone_e164 IS NULL AND phone_digits = ANY($2))
		ORDER BY phone_e164 IS NULL, created_at, id LIMIT 1 ` + lock
}

// LeadByPhoneArgs are the arguments of LeadByPhoneSQL for a number.
func LeadByPhoneArgs(n phone.Number) []any { return []any{n.E164, n.StoredDigits()} }
