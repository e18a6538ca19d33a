#!/usr/bin/env bash
# Starts (or stops, with `stop`) a real PgBouncer in front of the local PostgreSQL, for the
# pooler tests. Idempotent: a PgBouncer that answers is left alone; a missing `pgbouncer` is
# installed with apt. Needs root (Debian's package; PgBouncer itself runs as `postgres`).
#
# One PgBouncer process on 127.0.0.1:${ROWCLAIM_PGBOUNCER_PORT:-6432} with two pools on the
# `test` database of 127.0.0.1:5432:
#   postgres://postgres@127.0.0.1:6432/test      session mode     (a client keeps its server session)
#   postgres://postgres@127.0.0.1:6432/test_tx   transaction mode (a server session per transaction)
# auth_type trust, like the PostgreSQL it fronts. The tests read these URLs from
# ROWCLAIM_PGBOUNCER_SESSION_URL / ROWCLAIM_PGBOUNCER_TRANSACTION_URL, defaulting to the above.
#
#   bash tooling/pgbouncer.sh          # install if missing, start, wait until both pools answer
#   bash tooling/pgbouncer.sh stop     # stop it (the configuration directory stays)
set -u

port=${ROWCLAIM_PGBOUNCER_PORT:-6432}
dir=${ROWCLAIM_PGBOUNCER_DIR:-/var/lib/rowclaim-pgbouncer}
pidfile="$dir/pgbouncer.pid"

log() { printf '[pgbouncer] %s\n' "$*"; }

answers() { # database
  psql "postgres://postgres@127.0.0.1:$port/$1" -Atc 'select 1' >/dev/null 2>&1
}

stop() {
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")"
    for _ in $(seq 1 50); do kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || break; sleep 0.1; done
    log "stopped"
  else
    log "not running"
  fi
}

if [ "${1:-start}" = "stop" ]; then stop; exit 0; fi

if answers test && answers test_tx; then log "answers on 127.0.0.1:$port"; exit 0; fi

if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  log "installing pgbouncer"
  apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends pgbouncer >/dev/null \
    || { log "apt-get install pgbouncer failed"; exit 1; }
fi
bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)

mkdir -p "$dir"
cat >"$dir/userlist.txt" <<'EOF'
"postgres" ""
EOF
# Pool sizes: the session pool gives each client its own server session, so it is as large as
# the conformance suite's peak; PostgreSQL's max_connections (100) is shared with the direct tests.
cat >"$dir/pgbouncer.ini" <<EOF
[databases]
test = host=127.0.0.1 port=5432 dbname=test pool_mode=session pool_size=60
test_tx = host=127.0.0.1 port=5432 dbname=test pool_mode=transaction pool_size=10

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = session
max_client_conn = 1000
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
server_reset_query = DISCARD ALL
logfile = $dir/pgbouncer.log
pidfile = $pidfile
admin_users = postgres
EOF
chown -R postgres:postgres "$dir"

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  log "running but not answering: restarting"
  stop
fi
log "starting on 127.0.0.1:$port"
su postgres -s /bin/sh -c "$bin -d $dir/pgbouncer.ini" || { log "pgbouncer did not start"; tail -n 20 "$dir/pgbouncer.log"; exit 1; }
for _ in $(seq 1 50); do
  if answers test && answers test_tx; then log "answers on 127.0.0.1:$port (test: session, test_tx: transaction)"; exit 0; fi
  sleep 0.2
done
log "does not answer"; tail -n 20 "$dir/pgbouncer.log"; exit 1
