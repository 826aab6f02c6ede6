#!/usr/bin/env bash
# Local Redis topologies on private ports, from Debian's redis-server (installed when missing):
#   scripts/redis-topology.sh single   up [--port P] [--dir D] [--aof always|everysec]  one server on P
#   scripts/redis-topology.sh replica  up [--port P] [--dir D]  master P, replica P+1
#   scripts/redis-topology.sh sentinel up [--port P] [--dir D]  master P, replicas P+1 and P+2, sentinels P+3..P+5
#   scripts/redis-topology.sh cluster  up [--port P] [--dir D] [--replicas 1|0]  3 masters P..P+2, 3 replicas P+3..P+5
#     (--replicas 0: the 3 masters alone, for benchmarks that compare them with one server)
#   scripts/redis-topology.sh KIND down|status [--port P] [--dir D]
#   --min-replicas N: every data node refuses writes unless N replicas are connected and at most 2 s
#     behind (min-replicas-to-write / min-replicas-max-lag), as ADMIT_DURABILITY=replica requires
# Idempotent: `up` on a running topology only reports it. Every process writes its pid to D
# (default .services/<kind>-<P>), so `down` (or a test) can stop or kill exactly these.
# Prints the connection settings for the service on stdout, e.g.
#   REDIS_SENTINELS=127.0.0.1:26382,127.0.0.1:26383,127.0.0.1:26384 REDIS_SENTINEL_NAME=seckill
# (Two replicas: after a failover one is left to confirm writes, as ADMIT_DURABILITY=replica needs.)
set -euo pipefail

kind=${1:-}; cmd=${2:-}; shift 2 || true
port='' dir='' aof='' cluster_replicas=1 min_replicas=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) port=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --aof) aof=$2; shift 2 ;;
    --replicas) cluster_replicas=$2; shift 2 ;;
    --min-replicas) min_replicas=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
usage() { echo "usage: $0 single|replica|sentinel|cluster up|down|status [--port P] [--dir D] [--aof always|everysec] [--replicas 1|0] [--min-replicas N]" >&2; exit 2; }
case "$kind" in
  single | replica) port=${port:-16379} ;;
  sentinel) port=${port:-26379} ;;
  cluster) port=${port:-7000} ;;
  *) usage ;;
esac
case "$aof" in '' | always | everysec) ;; *) usage ;; esac
case "$cluster_replicas" in 0 | 1) ;; *) usage ;; esac
[[ $min_replicas =~ ^[0-9]$ ]] || usage
cluster_nodes=$((3 * (1 + cluster_replicas)))
dir=${dir:-"$(cd "$(dirname "$0")/.." && pwd)/.services/$kind-$port"}
NAME=seckill

log() { printf 'redis-topology: %s\n' "$*" >&2; }

ensure_redis() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return
  [[ $(id -u) -eq 0 ]] || { log "need root to install redis-server"; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
}

answers() { redis-cli -p "$1" ping 2>/dev/null | grep -q PONG; }

wait_until() {
  local what=$1; shift
  for _ in $(seq 1 100); do "$@" && return 0; sleep 0.1; done
  log "$what did not come up"; return 1
}

# A data node: no RDB snapshots; an append-only file only with --aof.
start_node() {
  local p=$1; shift
  answers "$p" && return 0
  mkdir -p "$dir/$p"
  local persistence=(--appendonly no)
  [[ -n $aof ]] && persistence=(--appendonly yes --appendfsync "$aof")
  # A replica (first sync, or re-sync after a failover) is served at once, not after the 5 s by
  # which a master waits for more replicas to share a diskless sync.
  redis-server --port "$p" --bind 127.0.0.1 --dir "$dir/$p" --save '' "${persistence[@]}" --daemonize yes \
    --repl-diskless-sync-delay 0 --min-replicas-to-write "$min_replicas" --min-replicas-max-lag 2 \
    --pidfile "$dir/$p.pid" --logfile "$dir/$p.log" "$@"
  wait_until "redis on $p" answers "$p"
}

start_sentinel() {
  local p=$1 master=$2
  answers "$p" && return 0
  # A sentinel rewrites its own configuration file, so each gets a fresh one.
  cat >"$dir/sentinel-$p.conf" <<CONF
port $p
bind 127.0.0.1
daemonize yes
pidfile $dir/$p.pid
logfile $dir/$p.log
dir $dir
sentinel monitor $NAME 127.0.0.1 $master 2
sentinel down-after-milliseconds $NAME 1000
sentinel failover-timeout $NAME 5000
sentinel parallel-syncs $NAME 1
CONF
  redis-server "$dir/sentinel-$p.conf" --sentinel
  wait_until "sentinel on $p" answers "$p"
}

settings() {
  case "$kind" in
    single | replica) echo "REDIS_URL=redis://127.0.0.1:$port" ;;
    sentinel) echo "REDIS_SENTINELS=127.0.0.1:$((port + 3)),127.0.0.1:$((port + 4)),127.0.0.1:$((port + 5)) REDIS_SENTINEL_NAME=$NAME" ;;
    cluster) echo "REDIS_CLUSTER_NODES=127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))" ;;
  esac
}

synced() { redis-cli -p "$1" info replication | grep -q 'master_link_status:up'; }

# A sentinel can fail the master over only once it knows the replicas (from the master's INFO)
# and enough other sentinels for the quorum (from their hello messages, every 2 s).
sentinel_ready() {
  local seen
  seen=$(redis-cli -p "$1" sentinel master "$NAME" 2>/dev/null | paste - - | awk '$1 == "num-slaves" || $1 == "num-other-sentinels" { print $2 }' | paste -sd' ')
  [[ $seen == '2 2' ]]
}

replicas_synced() {
  local n=0
  for node in 0 1 2 3 4 5; do synced "$((port + node))" && n=$((n + 1)); done
  [[ $n -eq 3 ]]
}

up() {
  ensure_redis
  mkdir -p "$dir"
  if [[ $kind == single ]]; then
    start_node "$port"
  elif [[ $kind == replica || $kind == sentinel ]]; then
    local replicas=1
    [[ $kind == sentinel ]] && replicas=2
    start_node "$port"
    for r in $(seq 1 "$replicas"); do
      start_node "$((port + r))" --replicaof 127.0.0.1 "$port"
      wait_until "replica $((port + r)) in sync" synced "$((port + r))"
    done
    if [[ $kind == sentinel ]]; then
      for s in 3 4 5; do start_sentinel "$((port + s))" "$port"; done
      for s in 3 4 5; do wait_until "sentinel $((port + s)) to see 2 replicas and 2 sentinels" sentinel_ready "$((port + s))"; done
    fi
  else
    for n in $(seq 0 $((cluster_nodes - 1))); do start_node "$((port + n))" --cluster-enabled yes --cluster-config-file "$dir/$((port + n))/nodes.conf" --cluster-node-timeout 2000; done
    if ! redis-cli -p "$port" cluster info | grep -q 'cluster_state:ok'; then
      redis-cli --cluster create $(for n in $(seq 0 $((cluster_nodes - 1))); do printf '127.0.0.1:%s ' "$((port + n))"; done) --cluster-replicas "$cluster_replicas" --cluster-yes >/dev/null
      wait_until 'cluster state ok' bash -c "redis-cli -p $port cluster info | grep -q 'cluster_state:ok'"
    fi
    # A replica that has not synced yet cannot take over: wait for all three.
    [[ $cluster_replicas -eq 0 ]] || wait_until 'replicas in sync' replicas_synced
  fi
  settings
}

down() {
  shopt -s nullglob
  local pids=()
  for pidfile in "$dir"/*.pid; do
    pids+=("$(cat "$pidfile")")
    kill "${pids[-1]}" 2>/dev/null || true
  done
  # Gone before the directory is: a server still writing its files would refill it.
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

status() {
  local last
  case "$kind" in single) last=0 ;; replica) last=1 ;; sentinel | cluster) last=5 ;; esac
  for n in $(seq 0 "$last"); do
    if answers "$((port + n))"; then echo "$((port + n)): up"; else echo "$((port + n)): down"; fi
  done
}

case "$cmd" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) usage ;;
esac
