package businesspack

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Date is a calendar day without a time or a zone: JSON "2006-01-02" (the registry's format date), a
// PostgreSQL date. Every date of the business tools' inputs and results is one, so it is read and written
// one way on both sides. The zero Date is no day: an optional Date is left out of an input
// (`json:",omitzero"`) or is a *Date, null in a result.
type Date struct {
	t time.Time // midnight UTC
	// set tells a day from the zero Date: 0001-01-01 is a day the schemas accept like any other, and
	// time.Time's zero is that day's midnight.
	set bool
}

// DateOf is the day t falls on in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{time.Date(y, m, d, 0, 0, 0, 0, time.UTC), true}
}

// ParseDate reads a day written YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	return Date{t, true}, nil
}

// String is the day as YYYY-MM-DD, or "" for the zero Date.
func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return d.t.Format(time.DateOnly)
}

// IsZero says d is no day (0001-01-01 is a day).
func (d Date) IsZero() bool { return !d.set }

// Time is the day's midnight in UTC, for its year, month, weekday or a format of it.
func (d Date) Time() time.Time { return d.t }

// In is the day's midnight in loc.
func (d Date) In(loc *time.Location) time.Time {
	y, m, day := d.t.Date()
	return time.Date(y, m, day, 0, 0, 0, 0, loc)
}

// AddDate is the day years, months and days later, normalised as time.AddDate does (31 March plus a month
// is 1 May); the zero Date stays no day.
func (d Date) AddDate(years, months, days int) Date {
	return Date{d.t.AddDate(years, months, days), d.set}
}

// AddDays is the day n days later (earlier for a negative n).
func (d Date) AddDays(n int) Date { return d.AddDate(0, 0, n) }

// DaysSince is how many days d is after o (negative when it is before). It counts days, not a time.Duration,
// which cannot hold more than about 292 years.
func (d Date) DaysSince(o Date) int { return int((d.t.Unix() - o.t.Unix()) / 86400) }

// Before says d is an earlier day than o.
func (d Date) Before(o Date) bool { return d.t.Before(o.t) }

// After says d is a later day than o.
func (d Date) After(o Date) bool { return d.t.After(o.t) }

// Equal says d and o are the same day.
func (d Date) Equal(o Date) bool { return d.set == o.set && d.t.Equal(o.t) }

// MarshalJSON writes the day as "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) { return json.Marshal(d.t.Format(time.DateOnly)) }

// UnmarshalJSON reads "YYYY-MM-DD"; null leaves d as it is, as for any JSON value.
func (d *Date) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseDate(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// DateValue lets pgx write a Date to a date column: NULL for the zero Date.
func (d Date) DateValue() (pgtype.Date, error) {
	return pgtype.Date{Time: d.t, Valid: d.set}, nil
}

// ScanDate lets pgx read a date column into a Date (a *Date for a nullable column).
func (d *Date) ScanDate(v pgtype.Date) error {
	if !v.Valid || v.InfinityModifier != pgtype.Finite {
		return fmt.Errorf("cannot scan %v into a date", v)
	}
	*d = DateOf(v.Time)
	return nil
}
