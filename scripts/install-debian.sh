#!/usr/bin/env bash
# Installs Debian packages whose binaries a test runs, never leaving their services running: the
# tests start their own servers on private ports (no system etcd on 2379, no Prometheus on 9090).
#   scripts/install-debian.sh NAME --binaries "b1 b2" --services "s1 s2" -- package...
# Idempotent: installs only when one of the binaries is missing. Starting a service is refused
# during the install (policy-rc.d), and afterwards each is stopped and disabled, so that no boot
# starts it either.
set -euo pipefail

name=$1; shift
binaries=() services=() packages=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --binaries) read -ra binaries <<<"$2"; shift 2 ;;
    --services) read -ra services <<<"$2"; shift 2 ;;
    --) shift; packages=("$@"); break ;;
    *) echo "install-debian: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { printf 'install-%s: %s\n' "$name" "$*" >&2; }

missing() {
  local binary
  for binary in "${binaries[@]}"; do command -v "$binary" >/dev/null 2>&1 || return 0; done
  return 1
}

missing || exit 0
[[ $(id -u) -eq 0 ]] || { log "need root to install ${packages[*]}"; exit 1; }

# Two test files may get here at once: one installs, the other waits and finds it done.
exec 9>"/var/lock/seckill-install-$name.lock"
flock -w 600 9 || { log "another install still holds /var/lock/seckill-install-$name.lock"; exit 1; }
missing || exit 0

# invoke-rc.d (and deb-systemd-invoke) ask policy-rc.d before starting a service; 101 means no.
# One already there (a container's) is left alone; ours goes once the install is over.
POLICY=/usr/sbin/policy-rc.d
if [[ ! -e $POLICY ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$POLICY"
  chmod 755 "$POLICY"
  trap 'rm -f "$POLICY"' EXIT
fi

install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=120 "${packages[@]}" >/dev/null; }
log "installing ${packages[*]}"
# Stale or missing package lists: refreshed once, then tried again.
install || { apt-get update -qq && install; } || { log "apt-get install ${packages[*]} failed"; exit 1; }

# Stopped if a policy-rc.d of someone else's let them start, and disabled where they would start at
# boot: systemd's units, or the SysV links without systemd. The init scripts stop only the process
# in their pid file, never a test's private servers.
for service in "${services[@]}"; do
  if [[ -d /run/systemd/system ]]; then
    systemctl disable --now "$service" >/dev/null 2>&1 || true
  elif [[ -x /etc/init.d/$service ]]; then
    if [[ -s /run/$service.pid || -s /run/$service/$service.pid ]]; then /etc/init.d/"$service" stop >/dev/null 2>&1 || true; fi
    update-rc.d "$service" disable >/dev/null 2>&1 || true
  fi
done
missing && { log "installed, but a binary is still missing: $(for b in "${binaries[@]}"; do command -v "$b" >/dev/null || printf '%s ' "$b"; done)"; exit 1; }
log "installed"
