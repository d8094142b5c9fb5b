package devicehub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/gemhq/gem/registry"
	"github.com/gemhq/gem/registry/gemlog"
	"github.com/gemhq/gem/sql/gemsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"
)

// Close codes the hub ends a session with, besides the protocol's own: a device reads them to know whether
// reconnecting can help.
const (
	// CloseRefused: the registration was refused (its problems were sent first); fix the tools and restart.
	CloseRefused websocket.StatusCode = 4000
	// CloseReplaced: another connection registered as the same device; two processes share a token.
	CloseReplaced websocket.StatusCode = 4001
	// CloseDeleted: the device was deleted on the hub (DELETE /devices/{name}).
	CloseDeleted websocket.StatusCode = 4002
)

// ackEvery bounds how often a session acknowledges answers (see acknowledge).
const ackEvery = 50 * time.Millisecond

// maxTools bounds the tools one device registers.
const maxTools = 2000

// session is one device's WebSocket on this hub.
type session struct {
	h    *Hub
	name string
	// grants bound the permissions the device's tools may declare (core_devices.permissions).
	grants registry.Grants
	ws     *websocket.Conn
	log    zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc

	registration uuid.UUID

	mu       sync.Mutex
	inflight map[int64]bool // attempts sent on this socket and not yet answered
	lastBeat time.Time      // when a heartbeat was last recorded

	// answers are answers read and not yet stored (see store); acks are answers stored and not yet
	// acknowledged to the device (see acknowledge). Only serve sends on answers, and closes it when the
	// socket has ended: the store stores every answer read, whatever became of the socket.
	answers chan *registry.DeviceAnswer
	acks    chan int64
	// stored is closed once the session has stored every answer it read (or never got to read one).
	stored chan struct{}
}

func (s *session) close(code websocket.StatusCode, reason string) {
	_ = s.ws.Close(code, reason)
	s.cancel()
}

func (s *session) write(m *registry.DeviceMessage) error {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	return wsjson.Write(ctx, s.ws, m)
}

// guarded runs one of the session's works; a panic in it is logged (with the device's name) and ends the
// session with an internal error, as a lost connection does: the device reconnects, and its calls' attempts
// are settled as after any disconnection.
func (s *session) guarded(work func()) {
	err := gemlog.Guarded(&s.log, "a device session", func() error { work(); return nil })
	if err != nil {
		s.close(websocket.StatusInternalError, "the hub failed; reconnect")
	}
}

// serve runs a session from its registration to its end.
func (s *session) serve() {
	defer s.cancel()
	defer s.ws.CloseNow()

	rctx, cancel := context.WithTimeout(s.ctx, registerWait)
	var hello registry.DeviceMessage
	err := wsjson.Read(rctx, s.ws, &hello)
	timedOut := rctx.Err() != nil
	cancel()
	if err != nil {
		s.log.Info().Err(err).Msg("device connection ended before it registered")
		// A message that is not JSON was closed with 1007 by wsjson itself.
		if timedOut {
			s.close(websocket.StatusPolicyViolation, fmt.Sprintf("no registration within %s", registerWait))
		}
		return
	}
	if hello.Type != registry.DeviceMsgRegister {
		s.close(websocket.StatusPolicyViolation, fmt.Sprintf("the first message must be %q, not %q", registry.DeviceMsgRegister, hello.Type))
		return
	}
	tools, problems, err := s.h.check(s.ctx, s.name, s.grants, hello.Tools)
	if err != nil {
		s.log.Error().Err(err).Msg("error checking a device's tools")
		s.close(websocket.StatusTryAgainLater, "the hub cannot check the registration now")
		return
	}
	if len(problems) > 0 {
		_ = s.write(&registry.DeviceMessage{Type: registry.DeviceMsgRegistered, Device: s.name, Problems: problems})
		s.log.Warn().Int("problems", len(problems)).Msg("device registration refused")
		s.close(CloseRefused, fmt.Sprintf("registration refused: %d problems", len(problems)))
		return
	}
	s.registration = uuid.Must(uuid.NewV7())
	// The answers the replaced session read are stored before this registration ends the attempts the
	// device no longer names: a device killed right after answering and started again at once gets its
	// answers counted, not its calls ended outcome_unknown.
	s.h.adopt(s)
	// The session's workers stop before the device is recorded disconnected: none of them may write after.
	var workers sync.WaitGroup
	defer func() {
		s.cancel()
		workers.Wait()
		close(s.stored)
		s.release()
	}()
	if s.ctx.Err() != nil {
		return // replaced (or the hub closing) while it waited
	}
	if err := s.register(tools, &hello); err != nil {
		s.log.Error().Err(err).Msg("error recording a device's registration")
		s.close(websocket.StatusTryAgainLater, "the hub cannot record the registration now")
		return
	}
	if err := s.write(&registry.DeviceMessage{Type: registry.DeviceMsgRegistered, Device: s.name, HeartbeatMS: s.h.cfg.Heartbeat.Milliseconds()}); err != nil {
		return
	}
	s.mu.Lock()
	for _, id := range hello.Running {
		s.inflight[id] = true // an id not this device's sent attempt leaves at the first dispatch
	}
	s.mu.Unlock()
	s.log.Info().Int("tools", len(tools)).Int("running", len(hello.Running)).Int("answers", len(hello.Answers)).
		Str("version", hello.Version).Msg("device registered")

	for _, work := range []func(){s.dispatch, s.store, s.acknowledge} {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.guarded(work)
		}()
	}
	// The store ends once it has stored the last answer read (before the workers are waited for).
	defer close(s.answers)
	// The answers kept while away are stored and acknowledged like any other.
	for i := range hello.Answers {
		s.answers <- &hello.Answers[i]
	}
	s.read()
}

// check returns the tools' contracts, or the problems that refuse the registration: a tool that does not
// check as a registry entry, a registry tool whose contract differs from the registry's, a
// device_agnostic tool whose contract differs from another device's (agnostic means interchangeable), or
// a tool needing a permission the device's grants do not cover.
func (h *Hub) check(ctx context.Context, device string, grants registry.Grants, raw []json.RawMessage) ([]*registry.Tool, []registry.Problem, error) {
	if len(raw) > maxTools {
		return nil, []registry.Problem{{Field: "tools", Message: fmt.Sprintf("has %d tools; a device serves at most %d", len(raw), maxTools)}}, nil
	}
	if problems := textProblems(raw); len(problems) > 0 {
		return nil, problems, nil
	}
	reg, err := registry.ParseDeviceTools(raw)
	var ce *registry.CheckError
	if errors.As(err, &ce) {
		return nil, ce.Problems, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var problems []registry.Problem
	var agnostic []string
	for _, t := range reg.Tools() {
		if missing := grants.Missing(t.Permissions); missing != nil {
			problems = append(problems, registry.Problem{Tool: t.Name, Field: "permissions", Message: fmt.Sprintf(
				"needs %v, which device %s may not serve (its permissions: %v; an admin changes them with PATCH /devices/%s)",
				missing, device, []string(grants), device)})
		}
		if main, ok := h.reg.OwnTool(t.Name); ok {
			if diff := registry.ContractDiff(main, t); len(diff) > 0 {
				problems = append(problems, registry.Problem{Tool: t.Name, Field: diff[0], Message: fmt.Sprintf(
					"differs from the registry's contract for this tool (%v): a device serving a registry tool keeps its contract", diff)})
			}
		}
		if t.DeviceAgnostic {
			agnostic = append(agnostic, t.Name)
		}
	}
	if len(agnostic) > 0 {
		// Only devices alive now count: a contract changes across a fleet as its devices re-register, and a
		// device long gone must not hold the old one in place.
		rows, err := h.pool.Query(ctx, `SELECT t.device, t.contract::text FROM core_device_tools t JOIN core_devices d ON d.name = t.device
			WHERE t.tool_name = ANY($1) AND t.agnostic AND t.device <> $2 AND gem_device_alive(d) ORDER BY t.device`, agnostic, device)
		if err != nil {
			return nil, nil, err
		}
		type other struct{ Device, Contract string }
		others, err := pgx.CollectRows(rows, pgx.RowToStructByPos[other])
		if err != nil {
			return nil, nil, err
		}
		seen := map[string]bool{}
		for _, o := range others {
			theirs, err := registry.ParseDeviceTool(json.RawMessage(o.Contract))
			if err != nil || seen[theirs.Name] {
				continue
			}
			mine, _ := reg.Tool(theirs.Name)
			if diff := registry.ContractDiff(theirs, mine); len(diff) > 0 {
				seen[theirs.Name] = true
				problems = append(problems, registry.Problem{Tool: mine.Name, Field: diff[0], Message: fmt.Sprintf(
					"is device_agnostic but differs from device %s's contract for it (%v): devices that may stand in for each other serve one contract", o.Device, diff)})
			}
		}
	}
	return reg.Tools(), problems, nil
}

// textProblems refuses the contracts' text PostgreSQL cannot store (a NUL, invalid UTF-8: gemsql's rule for
// a client's text), naming each tool and the field where it is: stored, the registration would fail, and
// the device would be told to try again forever.
func textProblems(raw []json.RawMessage) []registry.Problem {
	var problems []registry.Problem
	for i, doc := range raw {
		pointer, problem, found := gemsql.TextProblem(doc)
		if !found {
			continue
		}
		tool := fmt.Sprintf("tools[%d]", i)
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(doc, &named) == nil && named.Name != "" && gemsql.PlainTextProblem(named.Name) == "" {
			tool = named.Name
		}
		problems = append(problems, registry.Problem{Tool: tool, Field: pointerField(pointer),
			Message: problem + "; GEM stores text exactly, so it refuses what it cannot store"})
	}
	return problems
}

// pointerField writes a JSON pointer (/input_schema/properties/key) as a Problem's field, dotted
// (input_schema.properties.key); the whole contract's is "tools".
func pointerField(pointer string) string {
	if pointer == "" {
		return "tools"
	}
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return strings.Join(parts, ".")
}

// register records the registration in one transaction: the device connected here, its tools replaced, the
// sent attempts it no longer knows (neither running nor answered) ended (lost), and the executors waiting
// for a device told. The answers it kept while away are stored after, by the session's store.
func (s *session) register(tools []*registry.Tool, hello *registry.DeviceMessage) error {
	type toolRow struct {
		Name     string          `json:"name"`
		Contract json.RawMessage `json:"contract"`
		Agnostic bool            `json:"agnostic"`
	}
	rows := make([]toolRow, len(tools))
	for i, t := range tools {
		rows[i] = toolRow{Name: t.Name, Contract: t.Contract(), Agnostic: t.DeviceAgnostic}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	// Never nil: a nil slice is SQL NULL, and a registration naming nothing must end every sent attempt.
	keep := make([]int64, 0, len(hello.Running)+len(hello.Answers))
	keep = append(keep, hello.Running...)
	for _, a := range hello.Answers {
		keep = append(keep, a.Attempt)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	return pgx.BeginFunc(ctx, s.h.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE core_devices SET registration = $2, hub = $3, connected = true, connected_at = now(),
				disconnected_at = NULL, last_heartbeat = now(), alive_until = now() + make_interval(secs => $4)
			WHERE name = $1`, s.name, s.registration, s.h.cfg.HubID, s.h.cfg.deadAfter().Seconds())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("device %s was deleted", s.name)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM core_device_tools WHERE device = $1`, s.name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO core_device_tools (device, tool_name, contract, agnostic)
			SELECT $1, t.name, t.contract, t.agnostic FROM jsonb_to_recordset($2::jsonb) AS t(name text, contract jsonb, agnostic boolean)`,
			s.name, string(doc)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT gem_device_attempts_end($1, true, $2)`, s.name, keep); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+gemsql.DeviceChangedChannel+`', $1)`, s.name)
		return err
	})
}

// adopt makes s the device's session on this hub, closing the one it replaces and waiting until that one
// has stored every answer it read.
func (h *Hub) adopt(s *session) {
	h.mu.Lock()
	old := h.sessions[s.name]
	h.sessions[s.name] = s
	h.mu.Unlock()
	if old == nil {
		return
	}
	if old.ctx.Err() == nil {
		old.log.Warn().Msg("device connected again; closing its older connection")
		old.close(CloseReplaced, "replaced by a newer connection of this device")
	}
	select {
	case <-old.stored:
	case <-s.ctx.Done():
	}
}

// release ends the session: the device is recorded disconnected (if this was its latest registration).
// It runs after the last answer is stored, and its write waits for the disk, as does every write that
// makes it change nothing (a newer registration, the device's expiry or deletion): the answers stored
// without waiting and never acknowledged are on disk before the session is gone.
func (s *session) release() {
	s.h.mu.Lock()
	if s.h.sessions[s.name] == s {
		delete(s.h.sessions, s.name)
	}
	s.h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var current bool
	if err := s.h.pool.QueryRow(ctx, `SELECT gem_device_disconnected($1, $2)`, s.name, s.registration).Scan(&current); err != nil {
		s.log.Warn().Err(err).Msg("could not record the device's disconnection; its heartbeat deadline will")
		return
	}
	if current {
		s.log.Info().Msg("device disconnected")
	}
}

// read handles the device's messages until the socket ends.
func (s *session) read() {
	for {
		var m registry.DeviceMessage
		if err := wsjson.Read(s.ctx, s.ws, &m); err != nil {
			status := websocket.CloseStatus(err)
			switch {
			case s.ctx.Err() != nil, status == websocket.StatusNormalClosure, status == websocket.StatusGoingAway:
				s.log.Debug().Err(err).Msg("device connection closed")
			default:
				// A message that is not JSON was closed with 1007 by wsjson itself.
				s.log.Info().Err(err).Msg("device connection ended")
			}
			return
		}
		switch m.Type {
		case registry.DeviceMsgHeartbeat:
			if !s.heartbeat() {
				return
			}
		case registry.DeviceMsgAnswer:
			if m.Answer == nil {
				s.close(websocket.StatusPolicyViolation, "an answer message must carry an answer")
				return
			}
			// The store takes every answer, also once the session is ending: an answer read is never dropped.
			s.answers <- m.Answer
		default:
			s.close(websocket.StatusPolicyViolation, fmt.Sprintf("unknown message type %q", m.Type))
			return
		}
	}
}

// heartbeat moves the device's deadline; false means the session was replaced (another registration) or
// the device deleted, and is closed. Heartbeats closer together than half the interval are not recorded: a
// device cannot make the hub write faster than its interval asks.
func (s *session) heartbeat() bool {
	s.mu.Lock()
	recent := time.Since(s.lastBeat) < s.h.cfg.Heartbeat/2
	s.mu.Unlock()
	if recent {
		return true
	}
	ok, err := s.beat()
	if err != nil {
		s.log.Warn().Err(err).Msg("could not record a heartbeat")
	}
	return ok
}

// beat records a heartbeat, waiting for the disk. ok false: the session was closed (replaced, or the
// device deleted); err: the heartbeat was not recorded.
func (s *session) beat() (ok bool, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	var was bool
	err = s.h.pool.QueryRow(ctx, `UPDATE core_devices d SET last_heartbeat = now(), alive_until = now() + make_interval(secs => $3),
			connected = true, hub = $4
		FROM (SELECT connected AND alive_until > now() AS alive FROM core_devices WHERE name = $1 AND registration = $2 FOR UPDATE) prev
		WHERE d.name = $1 AND d.registration = $2
		RETURNING prev.alive`, s.name, s.registration, s.h.cfg.deadAfter().Seconds(), s.h.cfg.HubID).Scan(&was)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		var exists bool
		if err := s.h.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM core_devices WHERE name = $1)`, s.name).Scan(&exists); err == nil && !exists {
			s.close(CloseDeleted, "the device was deleted on the hub")
			return false, nil
		}
		s.close(CloseReplaced, "replaced by a newer connection of this device")
		return false, nil
	case err != nil:
		return true, err
	}
	s.mu.Lock()
	s.lastBeat = time.Now()
	s.mu.Unlock()
	if !was {
		// It had been given up for dead (frozen, or its network away) and is back: tell the catalogs.
		s.log.Info().Msg("device is alive again")
		if _, err := s.h.pool.Exec(ctx, `SELECT pg_notify('`+gemsql.DeviceChangedChannel+`', $1)`, s.name); err != nil {
			s.log.Warn().Err(err).Msg("could not announce the device's return")
		}
	}
	return true, nil
}

// acknowledge tells the device which of its answers are stored for good. Answers are stored without waiting
// for the disk, so the executor waiting on one hears at once; the device forgets an answer once it is
// acknowledged, so acknowledgements wait for a write that does wait for the disk — a heartbeat (an answer
// is a sign of life), whose commit makes every answer stored before it durable. One heartbeat serves every
// answer stored meanwhile, and there is at most one per ackEvery: acknowledgements are not on a call's
// path, and the disk's flushes are shared with every commit that waits for them.
func (s *session) acknowledge() {
	var ids []int64
	var last time.Time
	for {
		ids = ids[:0]
		select {
		case <-s.ctx.Done():
			return
		case id := <-s.acks:
			ids = append(ids, id)
		}
		if wait := ackEvery - time.Since(last); wait > 0 {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
	more:
		for {
			select {
			case id := <-s.acks:
				ids = append(ids, id)
			default:
				break more
			}
		}
		ok, err := s.beat()
		if err != nil {
			// The answers may not last: a new connection makes the device send them again.
			s.log.Warn().Err(err).Int("answers", len(ids)).Msg("could not make the device's answers durable; closing its connection so it sends them again")
			s.close(websocket.StatusTryAgainLater, "the hub cannot store answers now")
			return
		}
		if !ok {
			return
		}
		for _, id := range ids {
			if err := s.write(&registry.DeviceMessage{Type: registry.DeviceMsgAck, Attempt: id}); err != nil {
				return
			}
		}
	}
}

// storeBatchBytes bounds the results one statement stores.
const storeBatchBytes = 1 << 20

// store stores the answers the device sends, every answer waiting in one statement: under load one commit
// (and one turn at the lock PostgreSQL takes to commit a transaction that notified) serves many calls. It
// runs until serve closes answers, so an answer read just before the socket ended (a device killed right
// after answering) is stored too: the device will not send it again.
func (s *session) store() {
	batch := make([]*registry.DeviceAnswer, 0, 64)
	for first := range s.answers {
		batch = append(batch[:0], first)
		size := len(first.Result)
	more:
		for len(batch) < cap(batch) && size < storeBatchBytes {
			select {
			case a, ok := <-s.answers:
				if !ok {
					break more
				}
				batch, size = append(batch, a), size+len(a.Result)
			default:
				break more
			}
		}
		stored := s.storeAnswers(batch)
		s.mu.Lock()
		for _, id := range stored {
			delete(s.inflight, id)
		}
		s.mu.Unlock()
		for _, id := range stored {
			select {
			case s.acks <- id:
			case <-s.ctx.Done(): // the socket has ended: there is nobody to acknowledge
			}
		}
	}
}

// storeAnswers stores a batch of answers and returns the attempts stored. A device's answer is a tool's
// result, not the client's text: what PostgreSQL cannot store in it is repaired (gemsql.TextRepaired), as in
// a receipt of a call run by an executor. When the batch does not store all the same (a value PostgreSQL
// refuses), each answer is stored alone. One that still fails (the database away) is
// left to the device, which keeps an answer until it is acknowledged and sends it again when it
// registers: the connection is closed, so that it does. Storing does not end with the socket.
func (s *session) storeAnswers(batch []*registry.DeviceAnswer) []int64 {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	rows := make([]answerRow, len(batch))
	ids := make([]int64, len(batch))
	for i, a := range batch {
		rows[i], ids[i] = s.answerRow(a), a.Attempt
	}
	err := s.storeRows(ctx, rows)
	if err == nil {
		return ids
	}
	if len(batch) > 1 {
		s.log.Debug().Err(err).Int("answers", len(batch)).Msg("a batch of answers did not store; storing them one by one")
	}
	ids = ids[:0]
	var unstored int
	for _, row := range rows {
		if len(batch) > 1 {
			err = s.storeRows(ctx, []answerRow{row})
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code[:2] == "22" {
			// A result PostgreSQL still refuses (a value out of its range): the call fails instead.
			failed, _ := json.Marshal(&registry.CallError{Code: registry.CodeOutputContract, Message: fmt.Sprintf(
				"device %s answered a result that cannot be stored: %s", s.name, pgErr.Message)})
			err = s.storeRows(ctx, []answerRow{{Attempt: row.Attempt, State: gemsql.AttemptFailed, Error: failed}})
		}
		if err != nil {
			unstored++
			s.log.Warn().Err(err).Int64("device_attempt", row.Attempt).Bool("connected", s.ctx.Err() == nil).
				Msg("could not store a device's answer; it counts only if the device sends it again when it registers")
			continue
		}
		ids = append(ids, row.Attempt)
	}
	if unstored > 0 && s.ctx.Err() == nil {
		s.close(websocket.StatusTryAgainLater, "the hub cannot store answers now")
	}
	return ids
}

// storeRows runs storeAnswersSQL: one statement, one commit (not waiting for the disk).
func (s *session) storeRows(ctx context.Context, rows []answerRow) error {
	doc, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = s.h.relayPool.Exec(ctx, storeAnswersSQL, s.name, string(gemsql.TextRepaired(doc)))
	return err
}

// answerRow is an answer as it is stored.
type answerRow struct {
	Attempt int64           `json:"attempt"`
	State   string          `json:"state"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// answerRow checks an answer: one that is not a well-formed result or error is the device's failure.
func (s *session) answerRow(a *registry.DeviceAnswer) answerRow {
	row := answerRow{Attempt: a.Attempt, State: gemsql.AttemptSucceeded, Result: a.Result}
	callErr := a.Error
	switch {
	case a.Status == registry.StatusSucceeded && len(a.Result) > 0 && json.Valid(a.Result):
		callErr = nil
	default:
		row.State, row.Result = gemsql.AttemptFailed, nil
		if a.Status != registry.StatusFailed || a.Error == nil || a.Error.Code == "" {
			callErr = &registry.CallError{Code: registry.CodeHandlerError, Message: fmt.Sprintf(
				"device %s answered neither a result (status succeeded) nor an error with a code (status failed)", s.name)}
		}
	}
	if callErr != nil {
		row.Error, _ = json.Marshal(callErr)
	}
	return row
}

// storeAnswersSQL records answers on their attempts, where the attempt is this device's and still sent (an
// answer after the executor gave up, or a second time, changes nothing), and tells the waiting executors.
const storeAnswersSQL = `WITH u AS (
		UPDATE core_device_attempts t SET state = a.state, result = a.result, error = a.error, finished_at = now()
		FROM jsonb_to_recordset($2::jsonb) AS a(attempt bigint, state text, result jsonb, error jsonb)
		WHERE t.id = a.attempt AND t.device = $1 AND t.state = 'sent' RETURNING t.call_id)
	SELECT pg_notify('` + gemsql.DeviceResultChannel + `', u.call_id::text) FROM u`

// dispatch sends the device the attempts queued for it and cancels those abandoned, when told, and once per
// heartbeat interval in case a notification was missed (the listener wakes every watcher after it
// reconnects, so this is only a safety net: it costs each device a claim per interval, not per second).
func (s *session) dispatch() {
	wake, stop := s.h.listener.Watch(gemsql.DeviceDispatchChannel, s.name)
	defer stop()
	t := time.NewTicker(s.h.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := s.dispatchOnce(); err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("error dispatching calls to the device")
			}
		}
		select {
		case <-s.ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
	}
}

// claimSQL takes the device's queued attempts for this registration, marking them sent before they are
// written to the socket: an attempt that may have reached the device is never handed out again. Its commit
// waits for the disk (the main pool), and so makes durable the hand-off before it, which the executor
// commits without waiting.
const claimSQL = `UPDATE core_device_attempts a SET state = 'sent', sent_at = now()
	FROM core_tool_calls c
	WHERE a.device = $1 AND a.state = 'queued' AND c.id = a.call_id
	  AND EXISTS (SELECT 1 FROM core_devices d WHERE d.name = $1 AND d.registration = $2 AND d.connected)
	RETURNING a.id, a.call_id, c.tool_name, c.input::text, a.timeout_ms`

func (s *session) dispatchOnce() error {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	rows, err := s.h.pool.Query(ctx, claimSQL, s.name, s.registration)
	if err != nil {
		return err
	}
	type claimed struct {
		ID        int64
		CallID    uuid.UUID
		Tool      string
		Input     string
		TimeoutMS int64
	}
	calls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[claimed])
	if err != nil {
		return err
	}
	for _, c := range calls {
		s.mu.Lock()
		s.inflight[c.ID] = true
		s.mu.Unlock()
		// The device runs the handler: it gets the secret inputs in clear, over its authenticated socket.
		input, err := s.h.reg.OpenInput(c.Tool, []byte(c.Input))
		if err != nil {
			s.h.log.Error().Err(err).Int64("attempt", c.ID).Msg("a secret input cannot be opened; the device gets it sealed and will refuse it")
			input = []byte(c.Input)
		}
		err = s.write(&registry.DeviceMessage{Type: registry.DeviceMsgCall, Attempt: c.ID, CallID: c.CallID.String(),
			Tool: c.Tool, Input: json.RawMessage(input), TimeoutMS: c.TimeoutMS})
		if err != nil {
			// It may or may not have reached the device: it stays sent, and the device's next registration
			// (or its heartbeat deadline) says what became of it.
			s.close(websocket.StatusInternalError, "could not send a call")
			return fmt.Errorf("error sending attempt %d: %w", c.ID, err)
		}
	}

	s.mu.Lock()
	open := make([]int64, 0, len(s.inflight))
	for id := range s.inflight {
		open = append(open, id)
	}
	s.mu.Unlock()
	if len(open) == 0 {
		return nil
	}
	// Attempts this socket holds that are no longer this device's sent ones: ended (cancel the lost and
	// abandoned) or never its (a registration that named them).
	rows, err = s.h.pool.Query(ctx, `SELECT o.id, coalesce(a.state, '') FROM unnest($1::bigint[]) AS o(id)
		LEFT JOIN core_device_attempts a ON a.id = o.id AND a.device = $2
		WHERE a.state IS DISTINCT FROM 'sent'`, open, s.name)
	if err != nil {
		return err
	}
	type ended struct {
		ID    int64
		State string
	}
	done, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ended])
	if err != nil {
		return err
	}
	for _, d := range done {
		s.mu.Lock()
		delete(s.inflight, d.ID)
		s.mu.Unlock()
		if d.State == gemsql.AttemptAbandoned || d.State == gemsql.AttemptLost {
			if err := s.write(&registry.DeviceMessage{Type: registry.DeviceMsgCancel, Attempt: d.ID}); err != nil {
				return err
			}
		}
	}
	return nil
}
