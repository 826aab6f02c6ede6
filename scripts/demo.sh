#!/usr/bin/env bash
# The main job (README): install what is missing, start Redis and MariaDB if they are not
# running, run a real flash sale with a verdict from both stores, and stop what this run started.
set -euo pipefail
cd "$(dirname "$0")/.."
# Install when node_modules is missing or older than the lock file (new dependencies since).
[[ node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund
npm run --silent build

mkdir -p .services
already=$(ls .services/*.started 2>/dev/null || true)
bash scripts/services.sh up
started=()
for svc in redis mariadb postgres rabbitmq; do
  if [[ -f .services/$svc.started && $already != *"$svc.started"* ]]; then started+=("$svc"); fi
done
if [[ ${#started[@]} -gt 0 ]]; then trap 'bash scripts/services.sh down ${started[*]}' EXIT; fi

# DEMO_KEEP=1: the same as --keep (the service stays up after the verdict until Ctrl-C).
if [[ ${DEMO_KEEP:-} == 1 ]]; then set -- --keep "$@"; fi
node bin/seckill.js demo "$@"
