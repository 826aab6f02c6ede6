#!/usr/bin/env bash
# The test command (README, .ci/run): dependencies, services, then every test file on real
# Redis and MariaDB. Node 20's test runner has no globs, so the files are found here.
set -euo pipefail
cd "$(dirname "$0")/.."
# Install when node_modules is missing or older than the lock file (new dependencies since).
[[ node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund
bash scripts/services.sh up
mapfile -t files < <(find test -name '*.test.ts' | sort)
[[ ${#files[@]} -gt 0 ]] || { echo "no test files found" >&2; exit 1; }
npx tsc -p tsconfig.check.json
# A test may run 3 minutes at most (unless it says otherwise), and a file whose tests are done
# exits even if something it started still holds the event loop: a hang fails, never stalls CI.
exec node --import tsx --test --test-concurrency=4 --test-timeout=180000 --test-force-exit "${files[@]}"
