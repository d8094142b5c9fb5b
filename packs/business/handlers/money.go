package businesshandlers

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/gemhq/gem/executor"
)

// Money is integer cents, never floating point. Unit prices exclude GST. A line's total is its quantity
// (up to 3 decimal places) times its unit price, rounded half up to a whole cent. GST is 10% of the
// quote's subtotal (the sum of its line totals), rounded half up to a whole cent once, on the subtotal, not
// per line. The total is subtotal + GST. Amounts are never negative, so "half up" and "half away from zero"
// agree.

// GSTRatePercent is the GST rate, in percent.
const GSTRatePercent = 10

// Bounds that keep every product and sum far inside int64: 100,000 units at $10,000,000.00 is 10^17
// thousandths of a cent.
const (
	maxQuantityThousandths = 100_000 * 1000
	maxUnitPriceCents      = 1_000_000_000
)

// lineTotalCents returns quantity × unitPriceCents rounded half up to a whole cent.
func lineTotalCents(quantity json.Number, unitPriceCents int64) (int64, error) {
	milli, err := thousandths(quantity)
	if err != nil {
		return 0, err
	}
	if unitPriceCents < 0 || unitPriceCents > maxUnitPriceCents {
		return 0, executor.Invalid("unit_price_cents %d is outside 0..%d", unitPriceCents, int64(maxUnitPriceCents))
	}
	return (milli*unitPriceCents + 500) / 1000, nil
}

// gstCents returns GST on a subtotal, rounded half up to a whole cent.
func gstCents(subtotalCents int64) int64 {
	return (subtotalCents*GSTRatePercent + 50) / 100
}

// thousandths reads a positive decimal quantity with at most 3 decimal places as an integer number of
// thousandths, exactly.
func thousandths(quantity json.Number) (int64, error) {
	r, ok := new(big.Rat).SetString(quantity.String())
	if !ok {
		return 0, executor.Invalid("quantity %q is not a number", quantity)
	}
	r.Mul(r, big.NewRat(1000, 1))
	if !r.IsInt() {
		return 0, executor.Invalid("quantity %s has more than 3 decimal places", quantity)
	}
	n := r.Num()
	if n.Sign() <= 0 || !n.IsInt64() || n.Int64() > maxQuantityThousandths {
		return 0, executor.Invalid("quantity %s is outside the allowed range (more than 0, at most 100000)", quantity)
	}
	return n.Int64(), nil
}

// formatAUD writes cents as dollars the way paperwork shows them: 170555 → "$1,705.55".
func formatAUD(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	dollars := strconv.FormatInt(cents/100, 10)
	var b strings.Builder
	for i, r := range dollars {
		if i > 0 && (len(dollars)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return fmt.Sprintf("%s$%s.%02d", sign, b.String(), cents%100)
}
