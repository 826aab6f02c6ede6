#!/usr/bin/env bash
# Makes Redis, MariaDB, PostgreSQL and RabbitMQ reachable for development, tests and the demo.
#   scripts/services.sh up      use what already listens; otherwise install (Debian) and start
#   scripts/services.sh down [redis] [mariadb] [postgres] [rabbitmq]   stop what this script started (all, or those named)
#   scripts/services.sh status  say what answers
# Idempotent: safe to run any number of times. Needs root only when it has to install or start.
set -euo pipefail

REDIS_HOST=127.0.0.1 REDIS_PORT=6379
DB_HOST=127.0.0.1 DB_PORT=3306
PG_HOST=127.0.0.1 PG_PORT=5432
AMQP_HOST=127.0.0.1 AMQP_PORT=5672
STATE_DIR="$(cd "$(dirname "$0")/.." && pwd)/.services"

log() { printf 'services: %s\n' "$*" >&2; }

redis_up() {
  # RESP PING over bash's /dev/tcp: works before redis-cli is installed.
  local reply
  { exec 3<>"/dev/tcp/$REDIS_HOST/$REDIS_PORT"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  read -r -t 2 reply <&3 || true
  exec 3>&- 3<&-
  [[ "$reply" == +PONG* ]]
}

mariadb_up() {
  command -v mariadb >/dev/null 2>&1 || { (exec 3<>"/dev/tcp/$DB_HOST/$DB_PORT") 2>/dev/null; return; }
  mariadb -uroot -h "$DB_HOST" -P "$DB_PORT" --connect-timeout=2 -e 'select 1' >/dev/null 2>&1
}

postgres_up() {
  # The tests' URL: user postgres over TCP without a password (trust on loopback).
  command -v psql >/dev/null 2>&1 || { (exec 3<>"/dev/tcp/$PG_HOST/$PG_PORT") 2>/dev/null; return; }
  PGCONNECT_TIMEOUT=2 psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -w -Atc 'select 1' >/dev/null 2>&1
}

rabbitmq_up() {
  # The AMQP protocol header gets the server's own header back (or a connection.start frame).
  local reply
  { exec 3<>"/dev/tcp/$AMQP_HOST/$AMQP_PORT"; } 2>/dev/null || return 1
  printf 'AMQP\x00\x00\x09\x01' >&3
  reply=$(timeout 2 head -c 4 <&3 | od -An -c | tr -d ' \n' || true)
  exec 3>&- 3<&-
  [[ -n "$reply" ]]
}

apt_updated=0
install_packages() {
  if [[ $(id -u) -ne 0 ]]; then log "need root to install $*"; exit 1; fi
  if [[ $apt_updated -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() {
  local what=$1 check=$2
  for _ in $(seq 1 60); do
    if $check; then return 0; fi
    sleep 0.5
  done
  log "$what did not come up"
  return 1
}

start_redis() {
  command -v redis-server >/dev/null 2>&1 || install_packages redis-server
  mkdir -p /var/lib/redis /var/log/redis
  log "starting redis-server on $REDIS_HOST:$REDIS_PORT"
  redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" --save '' --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/seckill.log --pidfile "$STATE_DIR/redis.pid"
  wait_for redis redis_up
  touch "$STATE_DIR/redis.started"
}

start_mariadb() {
  command -v mariadbd >/dev/null 2>&1 || install_packages mariadb-server mariadb-client
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  if [[ ! -d /var/lib/mysql/mysql ]]; then
    log "initialising the MariaDB data directory"
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  log "starting mariadbd on $DB_HOST:$DB_PORT"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql \
    --bind-address="$DB_HOST" --port="$DB_PORT"
  local socket_up
  socket_up() { mariadb -uroot -e 'select 1' >/dev/null 2>&1; }
  wait_for 'mariadb (socket)' socket_up
  # Debian's root logs in through the unix socket only; allow an empty password over TCP too
  # (local development only: the service binds to loopback).
  mariadb -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
    CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
    GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;"
  wait_for mariadb mariadb_up
  touch "$STATE_DIR/mariadb.started"
}

start_postgres() {
  command -v pg_ctlcluster >/dev/null 2>&1 || install_packages postgresql postgresql-client
  local version
  version=$(ls /usr/lib/postgresql | sort -V | tail -1)
  [[ -n "$version" ]] || { log "no PostgreSQL server binaries under /usr/lib/postgresql"; return 1; }
  # Debian's package creates and starts cluster "main" where it can; make one where it did not.
  # Its default listen_addresses is localhost.
  pg_lsclusters -h 2>/dev/null | grep -q "^$version main " || pg_createcluster -p "$PG_PORT" "$version" main >/dev/null
  local hba="/etc/postgresql/$version/main/pg_hba.conf"
  # Trust on loopback, like the machines this project is developed on (local use only).
  grep -q '^# seckill: trust loopback' "$hba" || sed -i "1i # seckill: trust loopback\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust" "$hba"
  log "starting PostgreSQL $version on $PG_HOST:$PG_PORT"
  pg_ctlcluster "$version" main start 2>/dev/null || pg_ctlcluster "$version" main reload
  wait_for postgres postgres_up
  echo "$version" > "$STATE_DIR/postgres.started"
}

start_rabbitmq() {
  command -v rabbitmq-server >/dev/null 2>&1 || install_packages rabbitmq-server
  log "starting rabbitmq-server on $AMQP_HOST:$AMQP_PORT (guest/guest, loopback only)"
  RABBITMQ_NODE_IP_ADDRESS="$AMQP_HOST" RABBITMQ_NODE_PORT="$AMQP_PORT" rabbitmq-server -detached
  wait_for rabbitmq rabbitmq_up
  touch "$STATE_DIR/rabbitmq.started"
}

cmd=${1:-up}
mkdir -p "$STATE_DIR"
case "$cmd" in
  up)
    if redis_up; then log "redis: already answering on $REDIS_HOST:$REDIS_PORT"; else start_redis; fi
    # Some tests start redis-servers of their own (support/private-redis.ts), even when one answers.
    command -v redis-server >/dev/null 2>&1 || install_packages redis-server
    if mariadb_up; then log "mariadb: already answering on $DB_HOST:$DB_PORT"; else start_mariadb; fi
    if postgres_up; then log "postgres: already answering on $PG_HOST:$PG_PORT"; else start_postgres; fi
    if rabbitmq_up; then log "rabbitmq: already answering on $AMQP_HOST:$AMQP_PORT"; else start_rabbitmq; fi
    ;;
  down)
    shift || true
    wanted=" ${*:-redis mariadb postgres rabbitmq} "
    if [[ $wanted == *" redis "* && -f "$STATE_DIR/redis.started" ]]; then
      log "stopping redis"; kill "$(cat "$STATE_DIR/redis.pid")" 2>/dev/null || true
      rm -f "$STATE_DIR/redis.started"
    fi
    if [[ $wanted == *" mariadb "* && -f "$STATE_DIR/mariadb.started" ]]; then
      log "stopping mariadb"; start-stop-daemon --stop --oknodo --exec /usr/sbin/mariadbd >/dev/null
      rm -f "$STATE_DIR/mariadb.started"
    fi
    if [[ $wanted == *" postgres "* && -f "$STATE_DIR/postgres.started" ]]; then
      log "stopping postgres"; pg_ctlcluster "$(cat "$STATE_DIR/postgres.started")" main stop >/dev/null 2>&1 || true
      rm -f "$STATE_DIR/postgres.started"
    fi
    if [[ $wanted == *" rabbitmq "* && -f "$STATE_DIR/rabbitmq.started" ]]; then
      log "stopping rabbitmq"; rabbitmqctl stop >/dev/null 2>&1 || true
      rm -f "$STATE_DIR/rabbitmq.started"
    fi
    ;;
  status)
    redis_up && echo "redis: up ($REDIS_HOST:$REDIS_PORT)" || echo "redis: down"
    mariadb_up && echo "mariadb: up ($DB_HOST:$DB_PORT)" || echo "mariadb: down"
    postgres_up && echo "postgres: up ($PG_HOST:$PG_PORT)" || echo "postgres: down"
    rabbitmq_up && echo "rabbitmq: up ($AMQP_HOST:$AMQP_PORT)" || echo "rabbitmq: down"
    ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
