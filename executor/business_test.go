package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// J is a call's input.
type J = map[string]any

// res is a call's result, decoded with exact numbers.
type res map[string]any

// get walks a dotted path through objects and lists ("receipts.0.call_id").
func (r res) get(t *testing.T, path string) any {
	t.Helper()
	var v any = map[string]any(r)
	for _, k := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			v, ok = c[k]
			require.True(t, ok, "%s: no %q", path, k)
		case []any:
			i, err := strconv.Atoi(k)
			require.NoError(t, err, "%s: %q is not a list index", path, k)
			require.Less(t, i, len(c), "%s: the list has %d items", path, len(c))
			v = c[i]
		default:
			t.Fatalf("%s: %q is not inside an object or list", path, k)
		}
	}
	return v
}

func (r res) str(t *testing.T, path string) string {
	t.Helper()
	s, ok := r.get(t, path).(string)
	require.True(t, ok, "%s is not a string: %v", path, r.get(t, path))
	return s
}

func (r res) int(t *testing.T, path string) int64 {
	t.Helper()
	n, ok := r.get(t, path).(json.Number)
	require.True(t, ok, "%s is not a number: %v", path, r.get(t, path))
	i, err := n.Int64()
	require.NoError(t, err, path)
	return i
}

func (r res) list(t *testing.T, path string) []any {
	t.Helper()
	l, ok := r.get(t, path).([]any)
	require.True(t, ok, "%s is not a list: %v", path, r.get(t, path))
	return l
}

// run makes a call with plain SQL and waits for its receipt. input is a JSON string or a J.
func (b *testBundle) run(t *testing.T, ctx context.Context, tool string, input any) *registry.Receipt {
	t.Helper()
	s, ok := input.(string)
	if !ok {
		raw, err := json.Marshal(input)
		require.NoError(t, err)
		s = string(raw)
	}
	return b.waitOne(t, ctx, b.call(t, ctx, tool, s))
}

// ok runs a call that must succeed and returns its result.
func (b *testBundle) ok(t *testing.T, ctx context.Context, tool string, input any) (res, *registry.Receipt) {
	t.Helper()
	r := b.run(t, ctx, tool, input)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%s: %+v", tool, r.Error)
	return decodeResult(t, r), r
}

func decodeResult(t *testing.T, r *registry.Receipt) res {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.Result))
	dec.UseNumber()
	var out res
	require.NoError(t, dec.Decode(&out))
	return out
}

// refused runs a call that must fail with code, having written nothing.
func (b *testBundle) refused(t *testing.T, ctx context.Context, code registry.ErrorCode, tool string, input any) *registry.Receipt {
	t.Helper()
	r := b.run(t, ctx, tool, input)
	require.Equal(t, registry.StatusFailed, r.Status, "%s succeeded: %s", tool, r.Result)
	require.Equal(t, code, r.Error.Code, "%s: %s", tool, r.Error.Message)
	require.Empty(t, r.Effects.DBWrites, tool)
	return r
}

// writes sums a receipt's effects.db_writes as "table op" → rows.
func writes(r *registry.Receipt) map[string]int {
	w := map[string]int{}
	for _, d := range r.Effects.DBWrites {
		w[d.Table+" "+d.Op] += d.Count
	}
	return w
}

// wroteIDs returns the ids a receipt lists for one table and operation.
func wroteIDs(r *registry.Receipt, table, op string) []string {
	for _, d := range r.Effects.DBWrites {
		if d.Table == table && d.Op == op {
			return d.IDs
		}
	}
	return nil
}

// requireDecimal checks an exact decimal number in a result.
func requireDecimal(t *testing.T, want string, got any, msg string) {
	t.Helper()
	n, ok := got.(json.Number)
	require.True(t, ok, "%s: %v is not a number", msg, got)
	var a, b float64
	_, err := fmt.Sscan(want, &a)
	require.NoError(t, err)
	_, err = fmt.Sscan(n.String(), &b)
	require.NoError(t, err)
	require.Equal(t, a, b, "%s: %s", msg, n)
}

// sqlValue returns a single value from SQL.
func sqlValue[T any](t *testing.T, ctx context.Context, b *testBundle, sql string, args ...any) T {
	t.Helper()
	var v T
	require.NoError(t, b.pool.QueryRow(ctx, sql, args...).Scan(&v))
	return v
}

// str returns a single text value from SQL.
func (b *testBundle) str(t *testing.T, ctx context.Context, sql string, args ...any) string {
	t.Helper()
	return sqlValue[string](t, ctx, b, sql, args...)
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

var phoneSeq atomic.Int64

// newPhone returns a mobile number no other lead of the test run has.
func newPhone() string {
	return fmt.Sprintf("0412 %06d", phoneSeq.Add(1))
}

// newLead creates a lead with a phone number of its own and returns its id.
func (b *testBundle) newLead(t *testing.T, ctx context.Context) string {
	t.Helper()
	r, _ := b.ok(t, ctx, "leads.create", J{"name": "Fixture Lead", "phone": newPhone(), "email": "lead@example.com", "suburb": "Newtown"})
	return r.str(t, "lead_id")
}

func TestBusinessNotFound(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.startExecutor(t, nil)

	missing := uuid.NewString()
	tests := []struct {
		tool  string
		input J
	}{
		{"media.tag_asset", J{"asset_id": missing, "tags": []string{"roof"}}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			r := b.refused(t, ctx, registry.CodeNotFound, tt.tool, tt.input)
			require.Contains(t, r.Error.Message, missing)
		})
	}
}
