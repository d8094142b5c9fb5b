package executor_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// requireDenied checks a permission_denied receipt that wrote nothing and names want.
func requireDenied(t *testing.T, r *registry.Receipt, want ...string) map[string]any {
	t.Helper()
	require.Equal(t, registry.StatusFailed, r.Status, "%s", r.Result)
	require.Equal(t, registry.CodePermissionDenied, r.Error.Code, r.Error.Message)
	for _, w := range want {
		require.Contains(t, r.Error.Message, w)
	}
	require.Empty(t, r.Effects.DBWrites)
	return decodeDetails(t, r)
}

// connectAs makes a login role, a member of in, for the test, and connects as it.
func (b *testBundle) connectAs(t *testing.T, ctx context.Context, role, in string) *pgx.Conn {
	t.Helper()
	_, err := b.pool.Exec(ctx, `CREATE ROLE `+role+` LOGIN PASSWORD 'pw-for-tests' IN ROLE `+in)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = b.pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	u, err := url.Parse(b.url)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "pw-for-tests")
	conn, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestApproverBoundsPlanCalls: a call of an approved plan carries its approver (approved_by) and runs only
// when the approver, too, may make it: an approver lacking the tool's permission, revoked, unknown, or
// limited to agents the call is not made for has it refused permission_denied, naming the approver. (The
// brain checks first; this is the executor's check, which plain SQL cannot get round.)
func TestApproverBoundsPlanCalls(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant('author', '{*}'), gem_caller_grant('reader', '{read:*,approve}'),
		gem_caller_grant('writer', '{read:*,write:db,approve}'), gem_caller_grant('gone', '{*}'),
		gem_caller_grant('agented', '{*}', '{office-assistant}')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE core_callers SET revoked_at = now() WHERE name = 'gone'`)
	require.NoError(t, err)
	call := func(tool, input, approver string) *registry.Receipt {
		t.Helper()
		var id uuid.UUID
		require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, requested_by, approved_by)
			VALUES ($1, $2, 'author', $3) RETURNING id`, tool, input, approver).Scan(&id))
		return b.waitOne(t, ctx, id)
	}

	d := requireDenied(t, call("os.create_task", `{"title": "approved by a reader", "domain": "business"}`, "reader"),
		`approver "reader" lacks permission write:db, which os.create_task needs`)
	require.Equal(t, "reader", d["approver"])
	require.Equal(t, "author", d["caller"])
	require.Equal(t, 0, b.count(t, ctx, `SELECT count(*) FROM os_tasks WHERE title = 'approved by a reader'`))
	r := call("os.create_task", `{"title": "approved by a writer", "domain": "business"}`, "writer")
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	requireDenied(t, call("os.health_check", `{}`, "gone"), `approver "gone" is revoked`)
	requireDenied(t, call("os.health_check", `{}`, "nobody"), `approver "nobody" is not known`)
	requireDenied(t, call("os.health_check", `{}`, "agented"), `approver "agented" may act only as agents [office-assistant]`)
}

// TestAgentLimitedCallerWithoutAgent: a call in the name of a caller limited to some agents that names no
// agent is refused, so a caller cannot escape its limit by naming none (by SQL here).
func TestAgentLimitedCallerWithoutAgent(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant('ops', '{*}', '{ops-agent}')`)
	require.NoError(t, err)
	var id uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input, requested_by) VALUES ('os.health_check', '{}', 'ops')
		RETURNING id`).Scan(&id))
	d := requireDenied(t, b.waitOne(t, ctx, id), `caller "ops" may act only as agents [ops-agent], and the call names none`)
	require.Equal(t, []any{"ops-agent"}, d["agents"])
}

// TestSQLCallersReadTheirOwn: a role given gem_caller reads the calls it made — in core_tool_calls,
// core_calls, the receipts and the audit views — and not another role's; gem_auditor's members, and a role
// whose caller holds audit, read every call. Inserting, and reading back what was inserted, work as before.
func TestSQLCallersReadTheirOwn(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	suffix := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	connect := func(role, in string) *pgx.Conn { return b.connectAs(t, ctx, role, in) }
	ann, bob, audit, auditor := "gem_ann_"+suffix, "gem_bob_"+suffix, "gem_aud_"+suffix, "gem_ador_"+suffix
	annConn, bobConn := connect(ann, "gem_caller"), connect(bob, "gem_caller")
	auditConn, auditorConn := connect(audit, "gem_caller"), connect(auditor, "gem_auditor")
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant($1, '{read:db}'), gem_caller_grant($2, '{read:db}'), gem_caller_grant($3, '{read:db,audit}')`,
		"sql:"+ann, "sql:"+bob, "sql:"+audit)
	require.NoError(t, err)

	insert := func(conn *pgx.Conn, tool, input string) uuid.UUID {
		t.Helper()
		var id uuid.UUID
		require.NoError(t, conn.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ($1, $2) RETURNING id`, tool, input).Scan(&id))
		return id
	}
	annCall := insert(annConn, "os.health_check", `{}`)
	bobCall := insert(bobConn, "os.create_task", `{"title": "bob's", "domain": "business"}`) // denied: a failure, for core_recent_failures
	b.wait(t, ctx, annCall, bobCall)

	ids := []uuid.UUID{annCall, bobCall}
	count := func(conn *pgx.Conn, query string) int {
		t.Helper()
		var n int
		require.NoError(t, conn.QueryRow(ctx, query, ids).Scan(&n), query)
		return n
	}
	queries := []string{
		`SELECT count(*) FROM core_tool_calls WHERE id = ANY($1)`,
		`SELECT count(*) FROM core_calls WHERE id = ANY($1)`,
		`SELECT count(*) FROM core_tool_receipts WHERE call_id = ANY($1)`,
	}
	for _, q := range queries {
		require.Equal(t, 1, count(annConn, q), "ann reads her own call only: %s", q)
		require.Equal(t, 1, count(bobConn, q), "bob reads his own call only: %s", q)
		require.Equal(t, 2, count(auditorConn, q), "gem_auditor reads every call: %s", q)
		require.Equal(t, 2, count(auditConn, q), "a caller holding audit reads every call: %s", q)
	}
	failures := `SELECT count(*) FROM core_recent_failures WHERE call_id = ANY($1)`
	require.Equal(t, 0, count(annConn, failures), "bob's failure is not ann's to read")
	require.Equal(t, 1, count(bobConn, failures))
	require.Equal(t, 1, count(auditorConn, failures))
	var who string
	require.NoError(t, annConn.QueryRow(ctx, `SELECT requested_by FROM core_calls WHERE id = $1`, annCall).Scan(&who))
	require.Equal(t, "sql:"+ann, who)

	// A role cannot name an approver to borrow its reads (or anything else): approved_by is not its to write.
	_, err = annConn.Exec(ctx, `INSERT INTO core_tool_calls (tool_name, input, approved_by) VALUES ('os.health_check', '{}', $1)`, "sql:"+bob)
	require.ErrorContains(t, err, "permission denied")
}

// TestReceiptNotificationsCarryOnlyTheCallID: PostgreSQL has no permissions on notification channels, so
// any login — a gem_caller member whom row-level security keeps to its own calls — may LISTEN gem_receipt.
// What it hears of another caller's call is the call id alone: not the input, not the result; and reading
// the receipt that id names finds nothing under its role.
func TestReceiptNotificationsCarryOnlyTheCallID(t *testing.T) {
	ctx, b := setup(t)
	b.startExecutor(t, nil)
	suffix := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	ann, eve := "gem_ann_"+suffix, "gem_eve_"+suffix
	annConn, eveConn := b.connectAs(t, ctx, ann, "gem_caller"), b.connectAs(t, ctx, eve, "gem_caller")
	_, err := b.pool.Exec(ctx, `SELECT gem_caller_grant($1, '{*}'), gem_caller_grant($2, '{read:db}')`, "sql:"+ann, "sql:"+eve)
	require.NoError(t, err)
	_, err = eveConn.Exec(ctx, `LISTEN gem_receipt`)
	require.NoError(t, err)

	const secret = "ann's tender for the harbour roof"
	var id uuid.UUID
	require.NoError(t, annConn.QueryRow(ctx, `INSERT INTO core_tool_calls (tool_name, input) VALUES ('os.create_task', $1) RETURNING id`,
		`{"title": "`+secret+`", "domain": "business"}`).Scan(&id))
	r := b.waitOne(t, ctx, id)
	require.Equal(t, registry.StatusSucceeded, r.Status, "%+v", r.Error)
	require.Contains(t, string(r.Result), secret, "the receipt holds what eve must not hear")

	listenCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := eveConn.WaitForNotification(listenCtx)
	require.NoError(t, err)
	require.Equal(t, id.String(), n.Payload, "the notification is the call id alone")
	require.NotContains(t, n.Payload, secret)

	var seen int
	require.NoError(t, eveConn.QueryRow(ctx, `SELECT count(*) FROM core_tool_receipts WHERE call_id = $1`, id).Scan(&seen))
	require.Zero(t, seen, "eve reads the receipt under her role: not hers, so nothing")
}
