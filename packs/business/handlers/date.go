package businesshandlers

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// civilDate is a calendar date without a time or zone: JSON "2006-01-02" (JSON Schema format date),
// PostgreSQL date.
type civilDate struct{ t time.Time } // midnight UTC

// dateOf is the date t falls on in t's location.
func dateOf(t time.Time) civilDate {
	y, m, d := t.Date()
	return civilDate{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

func (d civilDate) String() string { return d.t.Format(time.DateOnly) }

func (d civilDate) addDays(n int) civilDate { return civilDate{d.t.AddDate(0, 0, n)} }

func (d civilDate) before(o civilDate) bool { return d.t.Before(o.t) }

func (d civilDate) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *civilDate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	d.t = t
	return nil
}

// DateValue lets pgx write a civilDate to a date column.
func (d civilDate) DateValue() (pgtype.Date, error) {
	return pgtype.Date{Time: d.t, Valid: true}, nil
}

// ScanDate lets pgx read a date column into a civilDate (use *civilDate for a nullable column).
func (d *civilDate) ScanDate(v pgtype.Date) error {
	if !v.Valid || v.InfinityModifier != pgtype.Finite {
		return fmt.Errorf("cannot scan %v into a date", v)
	}
	d.t = dateOf(v.Time).t
	return nil
}

func (d civilDate) equal(o civilDate) bool { return d.t.Equal(o.t) }

// The contract's results give dates as text (YYYY-MM-DD), as the registry's schemas do.

// dateText is a date as the contract's results give it, or nil.
func dateText(d *civilDate) *string {
	if d == nil {
		return nil
	}
	s := d.String()
	return &s
}

// dateOfText reads a date a handler wrote (dateText); text that is no date reads as the zero date.
func dateOfText(s string) civilDate {
	t, _ := time.Parse(time.DateOnly, s)
	return civilDate{t}
}
