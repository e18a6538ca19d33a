#!/usr/bin/env bash
# Bootstraps (or stops, with `stop`) a three-node MariaDB Galera cluster on this machine for the
# multi-master tests: Debian's `galera-4` with the installed MariaDB, each node with its own
# datadir, socket and ports, all on 127.0.0.1. The main MariaDB on 3306 is not touched.
# Idempotent: a cluster whose three nodes answer is left alone; a missing galera-4 is installed
# with apt. Needs root (Debian's packages; the nodes run as `mysql`).
#
#   node   SQL port   Galera port   SST port   URL
#   1      3311       4571          4574       mysql://root@127.0.0.1:3311/test
#   2      3312       4581          4584       mysql://root@127.0.0.1:3312/test
#   3      3313       4591          4594       mysql://root@127.0.0.1:3313/test
#
# The tests read ROWCLAIM_GALERA_URLS (three URLs, comma-separated), defaulting to the above.
#
#   bash tooling/galera.sh          # install if missing, bootstrap node 1, join 2 and 3, wait for size 3
#   bash tooling/galera.sh stop     # stop the three nodes (their datadirs stay, under $dir)
#   bash tooling/galera.sh reset    # stop and remove the datadirs
set -u

dir=${ROWCLAIM_GALERA_DIR:-/var/lib/rowclaim-galera}
nodes="1 2 3"
sql_port() { echo $((3310 + $1)); }
gal_port() { echo $((4561 + 10 * $1)); }

log() { printf '[galera] %s\n' "$*"; }

client() { # node, sql...
  local node=$1; shift
  mariadb --no-defaults -uroot -S "$dir/node$node/mysqld.sock" "$@"
}

cluster_size() { # node
  client "$1" -N -e "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'" 2>/dev/null | awk '{print $2}'
}

answers() { # node: the node is up, synced, and root answers over TCP
  [ "$(mariadb --no-defaults -h 127.0.0.1 -P "$(sql_port "$1")" -uroot test -N -e "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | awk '{print $2}')" = "Synced" ]
}

stop_node() { # node
  local pidfile="$dir/node$1/mysqld.pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    local pid; pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    log "node $1 stopped"
  fi
}

stop_all() { for node in 3 2 1; do stop_node "$node"; done; }

case "${1:-start}" in
  stop) stop_all; exit 0 ;;
  reset) stop_all; rm -rf "$dir"; log "removed $dir"; exit 0 ;;
  start) ;;
  *) echo "usage: $0 [start|stop|reset]" >&2; exit 2 ;;
esac

all_answer() { for node in $nodes; do answers "$node" || return 1; done; [ "$(cluster_size 1)" = "3" ]; }
if all_answer; then log "three nodes answer (cluster size 3)"; exit 0; fi

if [ ! -f /usr/lib/galera/libgalera_smm.so ] || ! command -v rsync >/dev/null 2>&1; then
  log "installing galera-4 and rsync"
  apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends galera-4 rsync >/dev/null \
    || { log "apt-get install galera-4 failed"; exit 1; }
fi

# A partly running cluster is stopped and started again from node 1.
stop_all

mkdir -p "$dir"
cluster_address="gcomm://127.0.0.1:$(gal_port 1),127.0.0.1:$(gal_port 2),127.0.0.1:$(gal_port 3)"
for node in $nodes; do
  home="$dir/node$node"
  mkdir -p "$home"
  cat >"$home/my.cnf" <<EOF
[mariadbd]
user = mysql
datadir = $home/data
socket = $home/mysqld.sock
pid-file = $home/mysqld.pid
log-error = $home/error.log
port = $(sql_port "$node")
bind-address = 127.0.0.1
skip-name-resolve
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
innodb_buffer_pool_size = 128M
innodb_log_file_size = 48M
innodb_flush_log_at_trx_commit = 2
max_connections = 300
wsrep_on = ON
wsrep_provider = /usr/lib/galera/libgalera_smm.so
wsrep_cluster_name = rowclaim
wsrep_cluster_address = $cluster_address
wsrep_node_name = node$node
wsrep_node_address = 127.0.0.1:$(gal_port "$node")
wsrep_provider_options = "base_port=$(gal_port "$node");gcache.size=64M;pc.recovery=FALSE"
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$(($(gal_port "$node") + 3))
wsrep_slave_threads = 2
EOF
  chown -R mysql:mysql "$home"
  if [ ! -d "$home/data/mysql" ]; then
    log "node $node: initialising $home/data"
    mariadb-install-db --no-defaults --user=mysql --datadir="$home/data" --skip-test-db >"$home/install.log" 2>&1 \
      || { log "mariadb-install-db failed"; tail -n 20 "$home/install.log"; exit 1; }
  fi
  # A datadir left by a node that was killed may refuse to bootstrap; node 1 always may.
  [ "$node" = 1 ] && [ -f "$home/data/grastate.dat" ] && sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$home/data/grastate.dat"
done

start_node() { # node, extra args...
  local node=$1; shift
  local home="$dir/node$node"
  start-stop-daemon --start --background --chuid mysql --pidfile "$home/mysqld.pid" \
    --exec /usr/sbin/mariadbd -- --defaults-file="$home/my.cnf" "$@"
  for _ in $(seq 1 240); do
    if client "$node" -N -e "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | grep -q Synced; then
      log "node $node synced on 127.0.0.1:$(sql_port "$node")"; return 0
    fi
    sleep 0.5
  done
  log "node $node did not sync"; tail -n 30 "$home/error.log"; return 1
}

log "bootstrapping node 1"
start_node 1 --wsrep-new-cluster || exit 1
client 1 -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
  GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
  CREATE DATABASE IF NOT EXISTS test; FLUSH PRIVILEGES;" || { log "could not create the test user"; exit 1; }
for node in 2 3; do
  log "joining node $node"
  start_node "$node" || exit 1
done
for _ in $(seq 1 60); do
  if all_answer; then log "three nodes answer (cluster size 3)"; exit 0; fi
  sleep 0.5
done
log "the cluster did not reach size 3 (size $(cluster_size 1))"; exit 1
