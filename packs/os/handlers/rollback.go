package oshandlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gemhq/gem/executor"
	ospack "github.com/gemhq/gem/packs/os"
	"github.com/gemhq/gem/registry"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// undoTarget is the call to roll back, as its call row and receipt describe it.
type undoTarget struct {
	id             uuid.UUID
	tool           string
	status         *string
	effects        []byte
	idempotencyHit bool
	idempotencyOf  *uuid.UUID
	rolledBackBy   *uuid.UUID
	rolledBackAt   *time.Time
}

// receiptEffects is the part of a receipt's effects a rollback reads.
type receiptEffects struct {
	DBWrites []struct {
		Table string   `json:"table"`
		Op    string   `json:"op"`
		Count int      `json:"count"`
		IDs   []string `json:"ids"`
	} `json:"db_writes"`
	Outside      []json.RawMessage `json:"outside"`
	FilesWritten []json.RawMessage `json:"files_written"`
}

// tableRow names one row of a table by its id as text.
type tableRow struct {
	table string
	id    string
}

// undoEntry is one before-image of core_undo_log.
type undoEntry struct {
	logID  int64
	table  string
	op     string
	rowID  *string
	before []byte
}

// rowRestore is how one row the call updated or deleted is put back: its earliest before-image, inserted
// again if the call's last write deleted the row, written over the row otherwise.
type rowRestore struct {
	row        tableRow
	before     []byte
	reinsert   bool
	firstLogID int64
	lastLogID  int64
}

// rollbackCall undoes a succeeded call's writes: rows it inserted are deleted and rows it updated or deleted
// are restored from the before-images recorded while it ran (core_undo_log). It refuses (conflict) a call
// with effects outside the database, a call whose rows another call changed since (unless that call was
// rolled back itself), and a call already rolled back. A call that wrote nothing answers rolled_back false
// with the reason. The rollback's own writes are captured like any call's, so it can be rolled back too.
func rollbackCall(ctx context.Context, c *executor.Call, in ospack.RollbackInput) (*ospack.RollbackOutput, error) {
	id, err := executor.RecordID("call_id", in.CallID)
	if err != nil {
		return nil, err
	}
	// Two rollbacks of one call take turns; the second then finds the first's record.
	if _, err := c.DB.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('gem.rollback:' || $1::text, 0))`, id); err != nil {
		return nil, fmt.Errorf("error locking call %s for its rollback: %w", id, err)
	}
	t := undoTarget{id: id}
	err = c.DB.QueryRow(ctx, `SELECT c.tool_name, r.status, r.effects, coalesce(r.idempotency_hit, false), r.idempotency_of,
			rb.created_by_call, rb.created_at
		FROM core_tool_calls c
		LEFT JOIN core_tool_receipts r ON r.call_id = c.id
		LEFT JOIN core_rollbacks rb ON rb.call_id = c.id
		WHERE c.id = $1`, id).Scan(&t.tool, &t.status, &t.effects, &t.idempotencyHit, &t.idempotencyOf, &t.rolledBackBy, &t.rolledBackAt)
	if err != nil {
		return nil, executor.NotFoundIfNoRows(err, "call", id)
	}
	out := &ospack.RollbackOutput{CallID: id.String(), ToolName: t.tool, Tables: []string{}}
	nothing := func(format string, args ...any) (*ospack.RollbackOutput, error) {
		reason := fmt.Sprintf(format, args...)
		out.Reason = &reason
		return out, nil
	}
	switch {
	case t.status == nil:
		return nil, executor.Conflict("call %s (%s) has not finished; it can be rolled back once it has a receipt", id, t.tool)
	case t.rolledBackBy != nil:
		return nil, executor.Conflict("call %s (%s) was already rolled back, by call %s at %s", id, t.tool, *t.rolledBackBy,
			t.rolledBackAt.UTC().Format(time.RFC3339))
	case *t.status != "succeeded":
		return nothing("call %s ended %s: a call that does not succeed keeps none of its writes, so there is nothing to undo", id, *t.status)
	case t.idempotencyHit:
		return nothing("call %s ran nothing: it answered with the result of call %s (same idempotency key); roll back that call instead",
			id, uuidOrUnknown(t.idempotencyOf))
	}
	var effects receiptEffects
	if err := json.Unmarshal(t.effects, &effects); err != nil {
		return nil, fmt.Errorf("error reading the effects of call %s: %w", id, err)
	}
	if why := outsideReason(c, t.tool, effects); why != "" {
		return nil, executor.Conflict("call %s (%s) cannot be rolled back: %s, which no rollback can take back; undo its records by hand if you must",
			id, t.tool, why)
	}
	if len(effects.DBWrites) == 0 {
		return nothing("call %s (%s) wrote nothing, so there is nothing to undo", id, t.tool)
	}

	plan, err := planRollback(ctx, c.DB, id, effects)
	if err != nil {
		return nil, err
	}
	// Rows locked first: a call changing one of them now finishes before the check below looks for it.
	if err := plan.lockRows(ctx, c.DB); err != nil {
		return nil, err
	}
	if err := checkLaterChanges(ctx, c.DB, id, plan); err != nil {
		return nil, err
	}
	if out.RowsDeleted, out.RowsRestored, err = plan.apply(ctx, c.DB, id); err != nil {
		return nil, err
	}
	if err := checkOnlyOwnRows(ctx, c.DB, c.ID, id, plan); err != nil {
		return nil, err
	}
	if _, err := c.DB.Exec(ctx, `INSERT INTO core_rollbacks (call_id, tool_name, rows_deleted, rows_restored) VALUES ($1, $2, $3, $4)`,
		id, t.tool, out.RowsDeleted, out.RowsRestored); err != nil {
		return nil, fmt.Errorf("error recording the rollback of call %s: %w", id, err)
	}
	out.RolledBack = true
	out.Tables = plan.tables()
	return out, nil
}

// outsideReason says how a call reached outside the database (its tool's permissions, or the effects its
// receipt recorded), or "" if it did not.
func outsideReason(c *executor.Call, tool string, effects receiptEffects) string {
	switch {
	case len(effects.Outside) > 0:
		return fmt.Sprintf("it had %d effects outside the database (messages sent, outside systems changed)", len(effects.Outside))
	case len(effects.FilesWritten) > 0:
		return fmt.Sprintf("it wrote %d files outside the database", len(effects.FilesWritten))
	case toolHasOutsideEffects(c, tool):
		t, _ := c.Registry.Tool(tool)
		return fmt.Sprintf("its tool reaches outside the database (permissions %s)", strings.Join(t.Permissions, ", "))
	}
	return ""
}

func uuidOrUnknown(id *uuid.UUID) string {
	if id == nil {
		return "(unknown)"
	}
	return id.String()
}

// rollbackPlan is what undoing one call takes: the rows it inserted (per table, in the order the receipt
// first lists each table) and the rows it updated or deleted.
type rollbackPlan struct {
	insertTables []string
	inserted     map[string][]string
	restores     []rowRestore
	columns      map[string]*tableColumns
}

// columnsOf reads (once) the columns of a table.
func (p *rollbackPlan) columnsOf(ctx context.Context, db executor.DB, table string) (*tableColumns, error) {
	if tc, ok := p.columns[table]; ok {
		return tc, nil
	}
	tc, err := readTableColumns(ctx, db, table)
	if err != nil {
		return nil, err
	}
	p.columns[table] = tc
	return tc, nil
}

// lockRows locks the rows of the plan that exist, so no other call changes them until the rollback ends.
func (p *rollbackPlan) lockRows(ctx context.Context, db executor.DB) error {
	byTable := map[string][]string{}
	for row := range p.touched() {
		byTable[row.table] = append(byTable[row.table], row.id)
	}
	for _, table := range slices.Sorted(maps.Keys(byTable)) {
		tc, err := p.columnsOf(ctx, db, table)
		if err != nil {
			return err
		}
		if _, err := db.Exec(ctx, `SELECT FROM `+tc.ident+` WHERE id = ANY($1::text[]::`+tc.idType+`[]) FOR UPDATE`, byTable[table]); err != nil {
			return fmt.Errorf("error locking the rows of %s: %w", table, err)
		}
	}
	return nil
}

func (p *rollbackPlan) touched() map[tableRow]bool {
	rows := map[tableRow]bool{}
	for table, ids := range p.inserted {
		for _, id := range ids {
			rows[tableRow{table, id}] = true
		}
	}
	for _, r := range p.restores {
		rows[r.row] = true
	}
	return rows
}

func (p *rollbackPlan) tables() []string {
	var tables []string
	for row := range p.touched() {
		if !slices.Contains(tables, row.table) {
			tables = append(tables, row.table)
		}
	}
	slices.Sort(tables)
	return tables
}

// planRollback reads the rows a call inserted (from its receipt) and the before-images of the rows it
// updated or deleted, and checks that every write the receipt counts has what its undo needs.
func planRollback(ctx context.Context, db executor.DB, callID uuid.UUID, effects receiptEffects) (*rollbackPlan, error) {
	plan := &rollbackPlan{inserted: map[string][]string{}, columns: map[string]*tableColumns{}}
	counted := map[string]int{}
	for _, w := range effects.DBWrites {
		if w.Op != "insert" {
			counted[w.Table+" "+w.Op] += w.Count
			continue
		}
		ids := slices.DeleteFunc(slices.Clone(w.IDs), func(s string) bool { return s == "" })
		if len(ids) < w.Count {
			// The receipt lists the first 100 ids of each table; created_by_call finds the others.
			more, found, err := rowsCreatedBy(ctx, db, w.Table, callID)
			if err != nil {
				return nil, err
			}
			if !found {
				return nil, executor.Conflict("call %s inserted %d rows into %s, more than its receipt lists, and %s has no "+
					"created_by_call column to find the others by; it cannot be rolled back", callID, w.Count, w.Table, w.Table)
			}
			for _, id := range more {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
		if !slices.Contains(plan.insertTables, w.Table) {
			plan.insertTables = append(plan.insertTables, w.Table)
		}
		plan.inserted[w.Table] = append(plan.inserted[w.Table], ids...)
	}

	rows, err := db.Query(ctx, `SELECT id, table_name, op, row_id, before FROM core_undo_log WHERE call_id = $1 ORDER BY id`, callID)
	if err != nil {
		return nil, fmt.Errorf("error reading the before-images of call %s: %w", callID, err)
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (undoEntry, error) {
		var e undoEntry
		err := r.Scan(&e.logID, &e.table, &e.op, &e.rowID, &e.before)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("error reading the before-images of call %s: %w", callID, err)
	}
	recorded := map[string]int{}
	byRow := map[tableRow]*rowRestore{}
	for _, e := range entries {
		recorded[e.table+" "+e.op]++
		if e.rowID == nil {
			return nil, executor.Conflict("call %s changed rows of %s, whose rows have no id to restore them by", callID, e.table)
		}
		row := tableRow{e.table, *e.rowID}
		if slices.Contains(plan.inserted[e.table], row.id) {
			continue // the row goes with the rest of what the call inserted
		}
		r, seen := byRow[row]
		if !seen {
			r = &rowRestore{row: row, before: e.before, firstLogID: e.logID}
			byRow[row] = r
		}
		r.reinsert = e.op == "delete"
		r.lastLogID = e.logID
	}
	for _, r := range byRow {
		plan.restores = append(plan.restores, *r)
	}
	for pair, n := range counted {
		if recorded[pair] != n {
			return nil, executor.Conflict("call %s has no before-images for some of its writes (%s: %d written, %d recorded), "+
				"so it cannot be restored; it probably ran before before-images were recorded", callID, pair, n, recorded[pair])
		}
	}
	// Newest first: the reverse of the order the call wrote in.
	slices.SortFunc(plan.restores, func(a, b rowRestore) int { return cmp.Compare(b.firstLogID, a.firstLogID) })
	return plan, nil
}

// rowsCreatedBy lists the ids of a table's rows whose created_by_call is the call; found is false for a
// table without that column.
func rowsCreatedBy(ctx context.Context, db executor.DB, table string, callID uuid.UUID) (ids []string, found bool, err error) {
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1)
		AND attname = 'created_by_call' AND NOT attisdropped)`, table).Scan(&found); err != nil {
		return nil, false, fmt.Errorf("error reading the columns of %s: %w", table, err)
	}
	if !found {
		return nil, false, nil
	}
	rows, err := db.Query(ctx, `SELECT id::text FROM `+pgx.Identifier{table}.Sanitize()+` WHERE created_by_call = $1`, callID)
	if err != nil {
		return nil, true, fmt.Errorf("error finding the rows call %s created in %s: %w", callID, table, err)
	}
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, true, err
}

// checkLaterChanges refuses the rollback if another call wrote one of the call's rows after it. Calls that
// were rolled back, and the calls that rolled them back, do not count: their writes cancel out.
func checkLaterChanges(ctx context.Context, db executor.DB, callID uuid.UUID, plan *rollbackPlan) error {
	var tables, ids []string
	var after []int64
	for table, list := range plan.inserted {
		for _, id := range list {
			tables, ids, after = append(tables, table), append(ids, id), append(after, 0)
		}
	}
	for _, r := range plan.restores {
		tables, ids, after = append(tables, r.row.table), append(ids, r.row.id), append(after, r.lastLogID)
	}
	var later uuid.UUID
	var tool *string
	var table, rowID, op string
	err := db.QueryRow(ctx, `
		WITH neutral AS (
			SELECT call_id AS id FROM core_rollbacks
			UNION SELECT created_by_call FROM core_rollbacks WHERE created_by_call IS NOT NULL),
		mine AS (SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[]) AS m (table_name, row_id, after_id))
		SELECT l.call_id, c.tool_name, l.table_name, l.row_id, l.op
		FROM mine m
		JOIN core_undo_log l ON l.table_name = m.table_name AND l.row_id = m.row_id AND l.id > m.after_id
		LEFT JOIN core_tool_calls c ON c.id = l.call_id
		WHERE l.call_id <> $1 AND l.call_id NOT IN (SELECT id FROM neutral)
		ORDER BY l.id LIMIT 1`, callID, tables, ids, after).Scan(&later, &tool, &table, &rowID, &op)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error looking for later changes to the rows of call %s: %w", callID, err)
	}
	return &executor.Error{Code: registry.CodeConflict, Message: fmt.Sprintf(
		"call %s (%s) changed row %s of %s (%s) after call %s wrote it; roll back call %s first, or change the row by hand",
		later, executor.ValueOr(tool, "unknown tool"), rowID, table, op, callID, later),
		Details: map[string]any{"later_call_id": later, "table": table, "row_id": rowID}}
}

// undoStep is one statement of a rollback.
type undoStep struct {
	describe string
	sql      string
	args     []any
	// restores counts as a restored row; otherwise the rows it affects count as deleted.
	restores bool
}

// apply runs the plan: deletes the inserted rows (tables in the reverse of the order they were written) and
// restores the others (newest write first). A step refused by a foreign key or a unique index waits for the
// others and is tried again, so parents come back before their children whatever order they were written in.
func (p *rollbackPlan) apply(ctx context.Context, db executor.DB, callID uuid.UUID) (deleted, restored int, err error) {
	var steps []undoStep
	for i := len(p.insertTables) - 1; i >= 0; i-- {
		table := p.insertTables[i]
		tc, err := p.columnsOf(ctx, db, table)
		if err != nil {
			return 0, 0, err
		}
		steps = append(steps, undoStep{
			describe: "delete the rows it inserted into " + table,
			sql:      `DELETE FROM ` + tc.ident + ` WHERE id = ANY($1::text[]::` + tc.idType + `[])`,
			args:     []any{p.inserted[table]},
		})
	}
	for _, r := range p.restores {
		tc, err := p.columnsOf(ctx, db, r.row.table)
		if err != nil {
			return 0, 0, err
		}
		step, err := tc.restoreStep(r)
		if err != nil {
			return 0, 0, err
		}
		steps = append(steps, step)
	}

	pending := steps
	for len(pending) > 0 {
		var waiting []undoStep
		var lastErr error
		for _, s := range pending {
			n, err := runInSavepoint(ctx, db, s)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && (pgErr.Code == "23503" || pgErr.Code == "23505") {
				waiting, lastErr = append(waiting, s), fmt.Errorf("%s: %w", s.describe, err)
				continue
			}
			if err != nil {
				return 0, 0, fmt.Errorf("error undoing call %s (%s): %w", callID, s.describe, err)
			}
			if s.restores {
				if n == 0 {
					return 0, 0, executor.Conflict("call %s cannot be rolled back: %s found no row (it was deleted outside GEM's calls)", callID, s.describe)
				}
				restored++
			} else {
				deleted += int(n)
			}
		}
		if len(waiting) == len(pending) {
			return 0, 0, &executor.Error{Code: registry.CodeConflict, Message: fmt.Sprintf(
				"call %s cannot be rolled back: other rows depend on what it wrote (%v)", callID, lastErr)}
		}
		pending = waiting
	}
	return deleted, restored, nil
}

// runInSavepoint runs one step so that its failure leaves the call's transaction usable.
func runInSavepoint(ctx context.Context, db executor.DB, s undoStep) (int64, error) {
	if _, err := db.Exec(ctx, `SAVEPOINT gem_undo_step`); err != nil {
		return 0, err
	}
	tag, err := db.Exec(ctx, s.sql, s.args...)
	if err != nil {
		if _, rerr := db.Exec(ctx, `ROLLBACK TO SAVEPOINT gem_undo_step`); rerr != nil {
			return 0, errors.Join(err, rerr)
		}
		return 0, err
	}
	if _, err := db.Exec(ctx, `RELEASE SAVEPOINT gem_undo_step`); err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// tableColumns are the columns of a table that a before-image can write back.
type tableColumns struct {
	table  string
	ident  string
	idType string
	// writable excludes generated columns; updatable also excludes identity columns.
	writable  []string
	updatable []string
}

func readTableColumns(ctx context.Context, db executor.DB, table string) (*tableColumns, error) {
	tc := &tableColumns{table: table, ident: pgx.Identifier{table}.Sanitize()}
	rows, err := db.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attgenerated <> '', a.attidentity <> ''
		FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table)
	if err != nil {
		return nil, fmt.Errorf("error reading the columns of %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		var generated, identity bool
		if err := rows.Scan(&name, &typ, &generated, &identity); err != nil {
			return nil, err
		}
		if name == "id" {
			tc.idType = typ
		}
		if generated {
			continue
		}
		tc.writable = append(tc.writable, name)
		if !identity {
			tc.updatable = append(tc.updatable, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if tc.idType == "" {
		return nil, executor.Conflict("table %s has no id column: its rows cannot be undone", table)
	}
	return tc, nil
}

// restoreStep writes a before-image back: the columns it holds, as they were.
func (tc *tableColumns) restoreStep(r rowRestore) (undoStep, error) {
	var image map[string]json.RawMessage
	if err := json.Unmarshal(r.before, &image); err != nil {
		return undoStep{}, fmt.Errorf("error reading a before-image of %s: %w", tc.table, err)
	}
	present := func(cols []string) []string {
		return slices.DeleteFunc(slices.Clone(cols), func(c string) bool { _, ok := image[c]; return !ok })
	}
	quote := func(cols []string, prefix string) string {
		q := make([]string, len(cols))
		for i, c := range cols {
			q[i] = prefix + pgx.Identifier{c}.Sanitize()
		}
		return strings.Join(q, ", ")
	}
	if r.reinsert {
		cols := present(tc.writable)
		return undoStep{
			describe: fmt.Sprintf("insert row %s of %s again", r.row.id, tc.table),
			sql: `INSERT INTO ` + tc.ident + ` (` + quote(cols, "") + `) OVERRIDING SYSTEM VALUE
				SELECT ` + quote(cols, "b.") + ` FROM jsonb_populate_record(NULL::` + tc.ident + `, $1) b`,
			args:     []any{r.before},
			restores: true,
		}, nil
	}
	cols := present(tc.updatable)
	sets := make([]string, len(cols))
	for i, c := range cols {
		q := pgx.Identifier{c}.Sanitize()
		sets[i] = q + " = b." + q
	}
	return undoStep{
		describe: fmt.Sprintf("restore row %s of %s", r.row.id, tc.table),
		sql: `UPDATE ` + tc.ident + ` t SET ` + strings.Join(sets, ", ") + `
			FROM jsonb_populate_record(NULL::` + tc.ident + `, $1) b WHERE t.id = $2::text::` + tc.idType,
		args:     []any{r.before, r.row.id},
		restores: true,
	}, nil
}

// checkOnlyOwnRows refuses the rollback if undoing changed rows the call never wrote: a cascade from a
// deleted row to rows written later that refer to it.
func checkOnlyOwnRows(ctx context.Context, db executor.DB, rollbackID, callID uuid.UUID, plan *rollbackPlan) error {
	var tables, ids []string
	for row := range plan.touched() {
		tables, ids = append(tables, row.table), append(ids, row.id)
	}
	var table, rowID string
	var creator *string
	err := db.QueryRow(ctx, `SELECT l.table_name, coalesce(l.row_id, ''), l.before ->> 'created_by_call' FROM core_undo_log l
		WHERE l.call_id = $1
		  AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS m (table_name, row_id)
		                  WHERE m.table_name = l.table_name AND m.row_id = l.row_id)
		ORDER BY l.id LIMIT 1`, rollbackID, tables, ids).Scan(&table, &rowID, &creator)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error checking what the rollback of call %s changed: %w", callID, err)
	}
	return &executor.Error{Code: registry.CodeConflict, Message: fmt.Sprintf(
		"rolling back call %s would also change row %s of %s (written by call %s), which refers to a row it created; roll that call back first",
		callID, rowID, table, executor.ValueOr(creator, "unknown")), Details: map[string]any{"table": table, "row_id": rowID}}
}
