#!/usr/bin/env bash
# Installs what support/patroni-cluster.ts runs: Patroni, etcd and HAProxy from Debian's packages.
#   scripts/install-patroni.sh
# Idempotent: installs only when one of the binaries (patroni, etcd, haproxy) is missing. The tests
# start their own etcd and haproxy on private ports, so the packages' services must not run (no
# system etcd on 2379, no system haproxy, no system patroni): starting them is refused during the
# install (policy-rc.d), and afterwards they are disabled, so that no boot starts them either.
set -euo pipefail

PACKAGES=(patroni etcd-server haproxy)
SERVICES=(etcd haproxy patroni)

log() { printf 'install-patroni: %s\n' "$*" >&2; }

missing() {
  local binary
  for binary in patroni etcd haproxy; do command -v "$binary" >/dev/null 2>&1 || return 0; done
  return 1
}

missing || exit 0
[[ $(id -u) -eq 0 ]] || { log "need root to install ${PACKAGES[*]}"; exit 1; }

# Two test files may start clusters at once: one installs, the other waits and finds it done.
exec 9>/var/lock/seckill-install-patroni.lock
flock -w 600 9 || { log "another install still holds /var/lock/seckill-install-patroni.lock"; exit 1; }
missing || exit 0

# invoke-rc.d (and deb-systemd-invoke) ask policy-rc.d before starting a service; 101 means no.
# One already there (a container's) is left alone; ours goes once the install is over.
POLICY=/usr/sbin/policy-rc.d
if [[ ! -e $POLICY ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$POLICY"
  chmod 755 "$POLICY"
  trap 'rm -f "$POLICY"' EXIT
fi

install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 "${PACKAGES[@]}" >/dev/null; }
log "installing ${PACKAGES[*]}"
# Stale or missing package lists: refreshed once, then tried again.
install || { apt-get update -qq && install; } || { log "apt-get install ${PACKAGES[*]} failed"; exit 1; }

# Stopped if a policy-rc.d of someone else's let them start, and disabled where they would start at
# boot: systemd's units, or the SysV links without systemd. The init scripts stop only the process
# in their pid file, never the private etcd and haproxy processes of a test.
for service in "${SERVICES[@]}"; do
  if [[ -d /run/systemd/system ]]; then
    systemctl disable --now "$service" >/dev/null 2>&1 || true
  elif [[ -x /etc/init.d/$service ]]; then
    [[ -s /run/$service.pid ]] && { /etc/init.d/"$service" stop >/dev/null 2>&1 || true; }
    update-rc.d "$service" disable >/dev/null 2>&1 || true
  fi
done
missing && { log "installed, but a binary is still missing: $(for b in patroni etcd haproxy; do command -v "$b" >/dev/null || printf '%s ' "$b"; done)"; exit 1; }
log "installed"
