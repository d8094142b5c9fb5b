#!/usr/bin/env bash
# dev-postgres.sh manages GEM's private PostgreSQL cluster for `make run`, `make test`, `make bench` and
# `make chaos`. It never touches a server it did not create.
#
#   sql/dev-postgres.sh start    start the cluster (initialising it the first time), print its DATABASE_URL
#   sql/dev-postgres.sh url      print the DATABASE_URL of the running cluster
#   sql/dev-postgres.sh stop     stop it (fast shutdown)
#   sql/dev-postgres.sh restart  restart it (used by `make chaos`)
#   sql/dev-postgres.sh status   say whether it runs
#   sql/dev-postgres.sh destroy  stop it and delete its data
#
# Environment (all optional):
#   GEM_PG_DIR     where the cluster lives. Defaults to .gem/postgres in the repository, or to
#                  ${TMPDIR:-/tmp}/gem-postgres-<hash> when run as root and the server user cannot reach it.
#   GEM_PG_BINDIR  folder with initdb, postgres and pg_ctl. Defaults to `pg_config --bindir`, then the newest
#                  /usr/lib/postgresql/*/bin.
#   GEM_PG_USER    the non-root user that runs the server when this script runs as root. Defaults to
#                  "postgres" if that user exists, else "nobody".
#   GEM_PG_PORT    TCP port on 127.0.0.1, chosen on first start (and again at a start that finds it taken by
#                  another program while the cluster was stopped). Defaults to the first free port from 25432,
#                  below the kernel's ephemeral range: a port in that range can be held for a minute by a
#                  client connection's local end (TIME_WAIT), and the server then cannot bind it.
#
# Everything is printed to stderr except the URL, so `DATABASE_URL=$(sql/dev-postgres.sh start)` works.
set -euo pipefail

cmd=${1:-start}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf 'dev-postgres: %s\n' "$*" >&2; }
die() { printf 'dev-postgres: %s\n' "$*" >&2; exit 1; }

find_bindir() {
	if [ -n "${GEM_PG_BINDIR:-}" ]; then
		echo "$GEM_PG_BINDIR"
		return
	fi
	local d
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return
		fi
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -V -r) /usr/local/pgsql/bin /opt/homebrew/bin /usr/local/bin; do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
			echo "$d"
			return
		fi
	done
	cat >&2 <<'MSG'
dev-postgres: PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found.
  Install PostgreSQL 15 or newer, for example:
    Debian/Ubuntu:  sudo apt-get install postgresql            (server binaries in /usr/lib/postgresql/<v>/bin)
    Fedora/RHEL:    sudo dnf install postgresql-server
    macOS:          brew install postgresql@15
  or point GEM_PG_BINDIR at the folder that holds them,
  or set DATABASE_URL to a server you already run (GEM then uses it and starts nothing).
MSG
	exit 1
}

# as_server_user runs a command as the user that owns the cluster: ourselves, or a non-root user when we are
# root (initdb and postgres refuse to run as root).
server_user=""
if [ "$(id -u)" = 0 ]; then
	server_user=${GEM_PG_USER:-}
	if [ -z "$server_user" ]; then
		if id postgres >/dev/null 2>&1; then server_user=postgres; else server_user=nobody; fi
	fi
fi
as_server_user() {
	if [ -n "$server_user" ]; then
		if command -v runuser >/dev/null 2>&1; then
			runuser -u "$server_user" -- "$@"
		else
			setpriv --reuid="$server_user" --regid="$(id -g "$server_user")" --init-groups -- "$@"
		fi
	else
		"$@"
	fi
}

pick_dir() {
	if [ -n "${GEM_PG_DIR:-}" ]; then
		echo "$GEM_PG_DIR"
		return
	fi
	local d=$root/.gem/postgres
	if [ -n "$server_user" ]; then
		mkdir -p "$root/.gem"
		# The server user must be able to reach the folder; a repository under /root usually is not.
		if ! as_server_user test -x "$root/.gem" 2>/dev/null; then
			d=${TMPDIR:-/tmp}/gem-postgres-$(printf '%s' "$root" | cksum | cut -d' ' -f1)
		fi
	fi
	echo "$d"
}

dir=$(pick_dir)
data=$dir/data
bindir=""

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url() {
	local port
	port=$(cat "$dir/port" 2>/dev/null) || die "no cluster in $dir; run: $0 start"
	echo "postgres://gem@127.0.0.1:$port/gem?sslmode=disable"
}

# free_port is the first free port from 25432.
free_port() {
	local port=25432
	while ! port_free "$port"; do port=$((port + 1)); done
	echo "$port"
}

running() { [ -f "$data/postmaster.pid" ] && as_server_user "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; }

init_cluster() {
	log "initialising a private cluster in $dir (server binaries: $bindir)"
	mkdir -p "$dir"
	if [ -n "$server_user" ]; then chown "$server_user" "$dir"; fi
	as_server_user "$bindir/initdb" -D "$data" -U gem --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
		as_server_user "$bindir/initdb" -D "$data" -U gem --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
		die "initdb failed; see $dir/initdb.log"
	local port=${GEM_PG_PORT:-}
	if [ -z "$port" ]; then port=$(free_port); fi
	# Loopback only, no Unix socket (its path could exceed the 107-byte limit), room for parallel tests.
	cat >>"$data/postgresql.conf" <<CONF

# GEM's private development cluster (sql/dev-postgres.sh)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
max_connections = 400
shared_buffers = 256MB
log_min_messages = warning
log_min_error_statement = panic
CONF
	echo "$port" >"$dir/port"
}

# start_server starts the stopped server. If its port is held as the local end of a client connection
# ("Address already in use"; possible for a port in the ephemeral range, until its TIME_WAIT ends after a
# minute), the start is retried for up to 75 seconds.
start_server() {
	local try
	for try in $(seq 1 25); do
		if as_server_user "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null 9>&-; then
			return 0
		fi
		tail -n 5 "$dir/server.log" 2>/dev/null | grep -q "Address already in use" || return 1
		log "port busy for a moment (try $try); retrying"
		sleep 3
	done
	return 1
}

start() {
	bindir=$(find_bindir)
	mkdir -p "$dir"
	exec 9>"$dir/.lock"
	flock 9
	if [ ! -f "$data/PG_VERSION" ]; then init_cluster; fi
	if ! running; then
		local port
		port=$(cat "$dir/port")
		if ! port_free "$port"; then
			# Taken while the cluster was stopped (another cluster, another program). Nothing can be connected
			# to a stopped server, so it moves to a free port, unless one was asked for.
			[ -z "${GEM_PG_PORT:-}" ] || die "port $port (GEM_PG_PORT) is taken by another program"
			local moved
			moved=$(free_port)
			log "port $port is taken by another program; the cluster moves to $moved"
			printf '\nport = %s\n' "$moved" >>"$data/postgresql.conf"
			echo "$moved" >"$dir/port"
			port=$moved
		fi
		if [ -n "$server_user" ]; then touch "$dir/server.log" && chown "$server_user" "$dir/server.log"; fi
		start_server || die "the server did not start; see $dir/server.log"
		log "started PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
	fi
	local psql=("$bindir/psql" -X -q -h 127.0.0.1 -p "$(cat "$dir/port")" -U gem)
	if [ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'gem'")" != 1 ]; then
		"${psql[@]}" -d postgres -c "CREATE DATABASE gem" >/dev/null
	fi
	url
}

case "$cmd" in
start) start ;;
url) url ;;
status)
	bindir=$(find_bindir)
	if running; then log "running: $(url)"; else
		log "not running"
		exit 3
	fi
	;;
stop)
	bindir=$(find_bindir)
	if running; then as_server_user "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
	;;
restart)
	bindir=$(find_bindir)
	if running; then as_server_user "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
	start_server || die "the server did not start again; see $dir/server.log"
	url
	;;
destroy)
	bindir=$(find_bindir)
	if running; then as_server_user "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null; fi
	rm -rf "$dir"
	;;
*) die "unknown command $cmd (start|url|stop|restart|status|destroy)" ;;
esac
