#!/usr/bin/env bash
# run.sh is `make run`: a private PostgreSQL (unless DATABASE_URL is set), migrations, a local bearer token in
# .gem/brain-token and a key for secret inputs in .gem/secret-key (unless GEM_SECRET_KEY is set), then the
# executor and the brain side by side until one of them stops.
#
#   - The brain's address (GEM_BRAIN_ADDR, default 127.0.0.1:8088) must be free: checked before anything
#     starts, so a second `make run` fails at once instead of starting a second executor.
#   - If the executor exits, the brain is stopped and run.sh exits 1: a brain with no executor would take
#     calls that nothing runs. If the brain exits, the executor is stopped the same way.
#   - Ctrl-C (or SIGTERM, or closing the terminal) stops both: the executor drains its running calls
#     (GEM_EXECUTOR_DRAIN_TIMEOUT); another Ctrl-C meanwhile does not cut the drain short.
#   - Logs use GEM_LOG_FORMAT=console unless it is set; colour only reaches a terminal.
#
# Environment: BIN (folder of the binaries, default bin), DATABASE_URL, GEM_BRAIN_ADDR, GEM_BRAIN_TOKEN_FILE
# (default .gem/brain-token), GEM_LOG_FORMAT, and everything the executor and the brain read.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=${BIN:-bin}
say() { printf 'gem: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

for b in executor brain; do
	[ -x "$bin/$b" ] || die "$bin/$b is missing: run make build (make run builds it)"
done

# The brain's address, checked before anything starts. Something answering there means it is taken.
addr=${GEM_BRAIN_ADDR:-127.0.0.1:8088}
port=${addr##*:}
host=${addr%:*}
host=${host#[}
host=${host%]}
case "$host" in "" | 0.0.0.0) host=127.0.0.1 ;; ::) host=::1 ;; esac
listening() {
	if command -v timeout >/dev/null 2>&1; then
		timeout 2 bash -c ">/dev/tcp/$1/$2" 2>/dev/null
	else
		bash -c ">/dev/tcp/$1/$2" 2>/dev/null
	fi
}
if [ "$port" != 0 ] && listening "$host" "$port"; then
	die "the brain's address $addr is already in use (another make run?): stop what listens there, or set GEM_BRAIN_ADDR to another address"
fi

if [ -z "${DATABASE_URL:-}" ]; then
	DATABASE_URL=$(sql/dev-postgres.sh start)
fi
export DATABASE_URL

mkdir -p .gem
export GEM_BRAIN_TOKEN_FILE=${GEM_BRAIN_TOKEN_FILE:-.gem/brain-token}
if [ ! -s "$GEM_BRAIN_TOKEN_FILE" ]; then
	(umask 077 && echo "local:$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$GEM_BRAIN_TOKEN_FILE")
	say "created a local bearer token in $GEM_BRAIN_TOKEN_FILE"
fi
token=$(cut -d: -f2 "$GEM_BRAIN_TOKEN_FILE")
# The key that seals secret inputs (docs/governance.md#secrets), shared by the executor and the brain.
if [ -z "${GEM_SECRET_KEY:-}" ]; then
	if [ ! -s .gem/secret-key ]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >.gem/secret-key)
		say "created a key for secret inputs in .gem/secret-key"
	fi
	GEM_SECRET_KEY=$(cat .gem/secret-key)
	export GEM_SECRET_KEY
fi
export GEM_LOG_FORMAT=${GEM_LOG_FORMAT:-console}
# Retired months of history go beside the private cluster (docs/retention.md).
export GEM_ARCHIVE_DIR=${GEM_ARCHIVE_DIR:-.gem/archive}

"$bin/executor" migrate

say "database $DATABASE_URL"
say "studio on http://$addr/studio — log in with the token after the colon in $GEM_BRAIN_TOKEN_FILE"
say "brain on http://$addr — try, from another terminal:"
cat >&2 <<EOF
  curl -s -H 'Authorization: Bearer $token' -d '{"message": "create a task to call John tomorrow, urgent", "mode": "enqueue_and_wait"}' http://$addr/brain/run
  bin/brain run -m 'new lead Ann Lee 0412 345 678 in Newtown, referral'
  psql "$DATABASE_URL" -c 'SELECT tool_name, status, summary FROM core_tool_receipts ORDER BY id DESC LIMIT 5'
EOF

exec_pid= brain_pid= stopping=
# stop sends SIGTERM once to what runs and waits for it: the executor drains its running calls, and a second
# SIGTERM would make it quit without draining, so a second signal to run.sh (bash runs its trap again) only
# waits again.
stop() {
	local pids
	pids=$(echo $exec_pid $brain_pid)
	[ -n "$pids" ] || return 0
	if [ -z "$stopping" ]; then
		stopping=1
		kill -TERM $pids 2>/dev/null || true
	fi
	wait $pids 2>/dev/null || true
}
# A hang-up (the terminal closed) and Ctrl-\ stop both too: in process groups of their own, they get neither.
# set +e: say fails once the terminal is gone, and stopping must go on.
trap 'set +e; say "stopping the executor and the brain"; stop; exit 130' INT TERM HUP QUIT

# Job control puts each process in a process group of its own: Ctrl-C reaches only this script, which stops
# both once (a second signal would make the executor quit without draining).
set -m
"$bin/executor" run &
exec_pid=$!
"$bin/brain" serve &
brain_pid=$!

# Wait for either to exit: wait -n where bash has it (4.3+), else look every second.
set +e
if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 403)); then
	wait -n
	status=$?
else
	while kill -0 "$exec_pid" 2>/dev/null && kill -0 "$brain_pid" 2>/dev/null; do sleep 1; done
	status=
fi
set -e
if ! kill -0 "$exec_pid" 2>/dev/null; then
	if [ -z "$status" ]; then status=0 && wait "$exec_pid" || status=$?; fi
	say "the executor exited (status $status): stopping the brain, which would take calls that nothing runs"
	stop
	exit 1
fi
if [ -z "$status" ]; then status=0 && wait "$brain_pid" || status=$?; fi
say "the brain exited (status $status): stopping the executor"
stop
exit $((status == 0 ? 1 : status))
