#!/usr/bin/env bash
# Makes sure the PostgreSQL and MariaDB servers the tests use answer on 127.0.0.1, starting
# whichever is down. Idempotent: a server that answers is left alone. Needs root (Debian's
# packages, as on the CI machine). A URL in ROWCLAIM_POSTGRES_URL / ROWCLAIM_MYSQL_URL means the
# caller brings that database, and it is not touched here.
set -u

log() { printf '[start-databases] %s\n' "$*"; }

wait_for() { # name, command...
  local name=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then log "$name answers"; return 0; fi
    sleep 1
  done
  log "$name does not answer"; return 1
}

pg_answers() { psql -h 127.0.0.1 -U postgres -d test -Atc 'select 1'; }
mariadb_answers() { mariadb -h 127.0.0.1 -P 3306 -uroot test -e 'select 1'; }

status=0

if [ -n "${ROWCLAIM_POSTGRES_URL:-}" ]; then
  log "PostgreSQL: using ROWCLAIM_POSTGRES_URL"
elif pg_answers >/dev/null 2>&1; then
  log "PostgreSQL answers"
else
  log "starting PostgreSQL"
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$version" ]; then log "no PostgreSQL cluster in /etc/postgresql"; status=1; else
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    if wait_for "PostgreSQL (postgres db)" psql -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1'; then
      psql -h 127.0.0.1 -U postgres -d postgres -Atc "select 1 from pg_database where datname = 'test'" | grep -q 1 \
        || psql -h 127.0.0.1 -U postgres -d postgres -c 'create database test'
      wait_for PostgreSQL pg_answers || status=1
    else status=1; fi
  fi
fi

if [ -n "${ROWCLAIM_MYSQL_URL:-}" ]; then
  log "MariaDB: using ROWCLAIM_MYSQL_URL"
elif mariadb_answers >/dev/null 2>&1; then
  log "MariaDB answers"
else
  log "starting MariaDB"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >/dev/null
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- \
    --user=mysql --port=3306 --bind-address=127.0.0.1
  if wait_for "MariaDB (socket)" mariadb -uroot -e 'select 1'; then
    mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
      CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
      GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
      CREATE DATABASE IF NOT EXISTS test; FLUSH PRIVILEGES;" || true
    wait_for MariaDB mariadb_answers || status=1
  else status=1; fi
fi

exit $status
