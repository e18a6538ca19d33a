#!/usr/bin/env bash
# Worker "hosts" on this machine, for the many-hosts tests: network namespaces rc-ns1 and rc-ns2,
# each joined to the host by its own veth pair on a bridge, all in 10.200.0.0/24 (addresses that
# exist only inside this machine; nothing is routed anywhere else), and a PostgreSQL cluster of
# its own (15/netns, port 5440) listening on 127.0.0.1 and on the bridge address 10.200.0.1, so
# the main PostgreSQL on 5432 is never restarted. Idempotent; installs iproute2 with apt if
# missing. Needs root.
#
#   host (bridge rc-br0)  10.200.0.1     PostgreSQL: postgres://postgres@10.200.0.1:5440/test
#   rc-ns1 (veth rc-v1)   10.200.0.11
#   rc-ns2 (veth rc-v2)   10.200.0.12
#
# The cluster ends sessions of a host that went away (documented in the README's "Where it
# runs"): tcp_keepalives_idle = 2 s, tcp_keepalives_interval = 1 s, tcp_keepalives_count = 2
# (a silent peer's idle session is ended about 4 s after it went quiet) and tcp_user_timeout =
# 4 s (the same while the server has unacknowledged data in flight).
#
#   bash tooling/netns.sh [start]        # namespaces, bridge, PostgreSQL 15/netns on 5440
#   bash tooling/netns.sh cut N          # drop every frame to and from rc-nsN (its host-side veth down)
#   bash tooling/netns.sh heal N         # undo cut (and delay)
#   bash tooling/netns.sh delay N MS     # add MS ms of latency each way (tc netem; exits 3 on a
#                                        # kernel without sch_netem, such as this CI machine's)
#   bash tooling/netns.sh netem          # exit 0 where netem works, 3 where not
#   bash tooling/netns.sh exec N cmd...  # run cmd inside rc-nsN
#   bash tooling/netns.sh stop           # stop PostgreSQL 15/netns, remove namespaces and bridge
set -u

namespaces="1 2"
bridge=rc-br0
pg_version=${ROWCLAIM_NETNS_PG_VERSION:-15}
pg_cluster=netns
pg_port=${ROWCLAIM_NETNS_PG_PORT:-5440}

log() { printf '[netns] %s\n' "$*"; }

qdisc() { # N netem-args...: the same netem on both ends of rc-nsN's veth pair
  local n=$1; shift
  tc qdisc replace dev "rc-h$n" root netem "$@"
  ip netns exec "rc-ns$n" tc qdisc replace dev "rc-v$n" root netem "$@"
}

unqdisc() { # N
  tc qdisc del dev "rc-h$1" root 2>/dev/null
  ip netns exec "rc-ns$1" tc qdisc del dev "rc-v$1" root 2>/dev/null
  return 0
}

pg_answers() {
  psql "postgres://postgres@10.200.0.1:$pg_port/test" -Atc 'select 1' >/dev/null 2>&1
}

netem_available() {
  tc qdisc replace dev "$bridge" root netem delay 0ms 2>/dev/null && tc qdisc del dev "$bridge" root 2>/dev/null
}

case "${1:-start}" in
  cut) # The host's end of the pair goes down: frames to and from rc-nsN are dropped, silently
    # (no reset reaches either side), as when a host's network fails.
    ip link set "rc-h$2" down; log "rc-ns$2 cut off"; exit 0 ;;
  heal) ip link set "rc-h$2" up; unqdisc "$2"; log "rc-ns$2 healed"; exit 0 ;;
  netem) # exit 0 where the kernel has sch_netem (needed by delay), 3 where not
    if netem_available; then log "netem available"; exit 0; fi
    log "this kernel has no netem qdisc (sch_netem): delay is not available"; exit 3 ;;
  delay)
    netem_available || { log "this kernel has no netem qdisc (sch_netem): delay is not available"; exit 3; }
    unqdisc "$2"; qdisc "$2" delay "${3}ms"; log "rc-ns$2: ${3} ms each way"; exit 0 ;;
  exec) n=$2; shift 2; exec ip netns exec "rc-ns$n" "$@" ;;
  stop)
    pg_ctlcluster "$pg_version" "$pg_cluster" stop 2>/dev/null && log "PostgreSQL $pg_version/$pg_cluster stopped"
    for n in $namespaces; do ip netns del "rc-ns$n" 2>/dev/null; ip link del "rc-h$n" 2>/dev/null; done
    ip link del "$bridge" 2>/dev/null
    log "namespaces removed"; exit 0 ;;
  start) ;;
  *) echo "usage: $0 [start|stop|cut N|heal N|delay N MS|exec N cmd...]" >&2; exit 2 ;;
esac

if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  log "installing iproute2"
  apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iproute2 >/dev/null \
    || { log "apt-get install iproute2 failed"; exit 1; }
fi

if ! ip link show "$bridge" >/dev/null 2>&1; then
  ip link add "$bridge" type bridge
  ip addr add 10.200.0.1/24 dev "$bridge"
fi
ip link set "$bridge" up
for n in $namespaces; do
  if ! ip netns list | grep -qw "rc-ns$n"; then ip netns add "rc-ns$n"; fi
  if ! ip link show "rc-h$n" >/dev/null 2>&1; then
    ip link add "rc-h$n" type veth peer name "rc-v$n"
    ip link set "rc-v$n" netns "rc-ns$n"
    ip link set "rc-h$n" master "$bridge"
  fi
  ip link set "rc-h$n" up
  ip netns exec "rc-ns$n" ip link set lo up
  ip netns exec "rc-ns$n" ip addr replace "10.200.0.1$n/24" dev "rc-v$n"
  ip netns exec "rc-ns$n" ip link set "rc-v$n" up
  unqdisc "$n"
done
log "rc-ns1 (10.200.0.11), rc-ns2 (10.200.0.12) joined to $bridge (10.200.0.1)"

if pg_answers; then log "PostgreSQL $pg_version/$pg_cluster answers on 10.200.0.1:$pg_port"; exit 0; fi
if ! pg_lsclusters -h | awk '{print $1"/"$2}' | grep -qx "$pg_version/$pg_cluster"; then
  log "creating PostgreSQL $pg_version/$pg_cluster on port $pg_port"
  pg_createcluster "$pg_version" "$pg_cluster" -p "$pg_port" >/dev/null || { log "pg_createcluster failed"; exit 1; }
fi
conf=/etc/postgresql/$pg_version/$pg_cluster
cat >"$conf/conf.d/rowclaim-netns.conf" <<EOF
listen_addresses = '127.0.0.1,10.200.0.1'
port = $pg_port
max_connections = 100
tcp_keepalives_idle = 2
tcp_keepalives_interval = 1
tcp_keepalives_count = 2
tcp_user_timeout = 4000
EOF
cat >"$conf/pg_hba.conf" <<'EOF'
local all all trust
host all all 127.0.0.1/32 trust
host all all 10.200.0.0/24 trust
EOF
pg_ctlcluster "$pg_version" "$pg_cluster" restart 2>/dev/null || pg_ctlcluster "$pg_version" "$pg_cluster" start \
  || { log "PostgreSQL $pg_version/$pg_cluster did not start"; exit 1; }
for _ in $(seq 1 60); do
  if psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then break; fi
  sleep 0.5
done
psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -Atc "select 1 from pg_database where datname = 'test'" | grep -q 1 \
  || psql -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -qc 'create database test'
if pg_answers; then log "PostgreSQL $pg_version/$pg_cluster answers on 10.200.0.1:$pg_port"; exit 0; fi
log "PostgreSQL $pg_version/$pg_cluster does not answer on 10.200.0.1:$pg_port"; exit 1
