#!/usr/bin/env bash
# Test hosts on one machine: network namespaces joined by veth pairs to a bridge of their own, so a
# test can cut the network between "machines" (this kernel has no tc netem; a cut is a blackhole
# route, which drops packets silently as a broken link does).
#   scripts/test-hosts.sh up      --net N HOST...   make hosts HOST... on 10.250.N.0/24 (the root
#                                                   namespace is 10.250.N.1, the hosts .2, .3, ... in order)
#   scripts/test-hosts.sh addr    --net N HOST       the host's address
#   scripts/test-hosts.sh exec    --net N HOST CMD…  run CMD inside the host
#   scripts/test-hosts.sh cut     --net N A B [--one-way]  drop A's packets to B (and B's to A unless --one-way);
#                                                   `root` names the root namespace (where the tests run)
#   scripts/test-hosts.sh heal    --net N [A B]      remove the cuts (all, or those between A and B)
#   scripts/test-hosts.sh down    --net N            kill what runs in the hosts, remove them
# Every address it hands out lives inside the namespaces it creates: they are the tests' own hosts,
# and nothing else is ever addressed. `up` first removes what an earlier `up --net N` left.
# Needs root (ip netns).
set -euo pipefail

cmd=${1:-}; shift || true
net=''
args=()
one_way=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --net) net=$2; shift 2 ;;
    --one-way) one_way=1; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
usage() { echo "usage: $0 up|addr|exec|cut|heal|down --net N [HOST...] (N in 1..254)" >&2; exit 2; }
[[ $net =~ ^[0-9]+$ ]] && ((net >= 1 && net <= 254)) || usage
[[ $(id -u) -eq 0 ]] || { echo "test-hosts: needs root (ip netns)" >&2; exit 1; }
command -v ip >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; }

STATE="$(cd "$(dirname "$0")/.." && pwd)/.services/hosts-$net"
SUBNET="10.250.$net"
NS="skh$net"          # namespace names: skhN-sw (the bridge), skhN-HOST
ROOT_LINK="skh${net}r" # the root namespace's veth (names are at most 15 characters)

log() { printf 'test-hosts: %s\n' "$*" >&2; }

address_of() {
  local host=$1
  [[ $host == root ]] && { echo "$SUBNET.1"; return; }
  awk -v h="$host" '$1 == h { print $2 }' "$STATE/hosts" 2>/dev/null | grep . || { log "no host $host on net $net"; exit 1; }
}

# Runs a command in a host's namespace, or in the root namespace for `root`.
in_host() {
  local host=$1; shift
  if [[ $host == root ]]; then "$@"; else ip netns exec "$NS-$host" "$@"; fi
}

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^$NS-" || true); do
    # Whatever still runs inside (servers of the test) goes with its host.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$ROOT_LINK" 2>/dev/null || true
  # Cuts from the root namespace.
  ip route show type blackhole 2>/dev/null | awk -v s="$SUBNET." 'index($2, s) == 1 { print $2 }' | while read -r dst; do
    ip route del blackhole "$dst" 2>/dev/null || true
  done
  rm -rf "$STATE"
}

up() {
  [[ ${#args[@]} -gt 0 ]] || usage
  ((${#args[@]} <= 250)) || usage
  down
  mkdir -p "$STATE"
  ip netns add "$NS-sw"
  ip -n "$NS-sw" link add br0 type bridge
  ip -n "$NS-sw" link set br0 up
  ip link add "$ROOT_LINK" type veth peer name root netns "$NS-sw"
  ip -n "$NS-sw" link set root master br0 up
  ip addr add "$SUBNET.1/24" dev "$ROOT_LINK"
  ip link set "$ROOT_LINK" up
  local i=2 host
  for host in "${args[@]}"; do
    [[ $host =~ ^[a-z][a-z0-9]{0,9}$ && $host != root && $host != sw ]] || { log "bad host name $host"; down; exit 2; }
    ip netns add "$NS-$host"
    ip link add eth0 netns "$NS-$host" type veth peer name "h$i" netns "$NS-sw"
    ip -n "$NS-sw" link set "h$i" master br0 up
    ip -n "$NS-$host" addr add "$SUBNET.$i/24" dev eth0
    ip -n "$NS-$host" link set eth0 up
    ip -n "$NS-$host" link set lo up
    echo "$host $SUBNET.$i" >>"$STATE/hosts"
    i=$((i + 1))
  done
  cat "$STATE/hosts"
}

cut() {
  [[ ${#args[@]} -eq 2 ]] || usage
  local a=${args[0]} b=${args[1]}
  in_host "$a" ip route replace blackhole "$(address_of "$b")/32"
  [[ $one_way -eq 1 ]] || in_host "$b" ip route replace blackhole "$(address_of "$a")/32"
}

heal() {
  local hosts=(root) host dst
  if [[ ${#args[@]} -eq 2 ]]; then
    in_host "${args[0]}" ip route del blackhole "$(address_of "${args[1]}")/32" 2>/dev/null || true
    in_host "${args[1]}" ip route del blackhole "$(address_of "${args[0]}")/32" 2>/dev/null || true
    return
  fi
  [[ ${#args[@]} -eq 0 ]] || usage
  while read -r host _; do hosts+=("$host"); done <"$STATE/hosts"
  for host in "${hosts[@]}"; do
    for dst in $(in_host "$host" ip route show type blackhole | awk -v s="$SUBNET." 'index($2, s) == 1 { print $2 }'); do
      in_host "$host" ip route del blackhole "$dst" 2>/dev/null || true
    done
  done
}

case "$cmd" in
  up) up ;;
  down) down ;;
  addr) [[ ${#args[@]} -eq 1 ]] || usage; address_of "${args[0]}" ;;
  exec) [[ ${#args[@]} -ge 2 ]] || usage; host=${args[0]}; [[ $host != root ]] && address_of "$host" >/dev/null; in_host "$host" "${args[@]:1}" ;;
  cut) cut ;;
  heal) heal ;;
  *) usage ;;
esac
