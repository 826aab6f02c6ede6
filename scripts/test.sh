#!/usr/bin/env bash
# The test command (README, .ci/run): dependencies, services, then every test file on real
# Redis and MariaDB, then the Redis-touching integration tests again on a local Redis Cluster,
# then the database-touching ones again on PostgreSQL.
# Node 20's test runner has no globs, so the files are found here.
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the time goes: each step's seconds on stderr at the end, each pass's files in .test-times/.
times=()
step() { times+=("$(printf '%4ds  %s' $((SECONDS - step_start)) "$1")"); step_start=$SECONDS; }
report() { printf 'test.sh: %s\n' "${times[@]}" "total ${SECONDS}s" >&2; }
trap report EXIT
step_start=$SECONDS

# The page tests (test/web) drive Debian's Chromium through playwright-core: installed once, in
# the background while the dependencies install and the code is type checked (a minute or two of
# downloading on a fresh machine), awaited before the first pass.
chromium_install=
if [[ ! -x /usr/bin/chromium ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "test/web needs /usr/bin/chromium: run as root once, or apt-get install chromium" >&2; exit 1; }
  mkdir -p .test-times
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >.test-times/chromium-install.log 2>&1 &
  chromium_install=$!
fi
# Install when node_modules is missing or older than the lock file (new dependencies since).
[[ node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund
step "dependencies"
# `node` is the Node 24 the lock file pins (node_modules/.bin/node, from the registry's binary
# package) where that package installs (Linux x64), else the machine's own; TEST_NODE_BIN (a bin
# folder, scripts/test-node.sh) puts another line first.
export PATH="${TEST_NODE_BIN:+$TEST_NODE_BIN:}$PWD/node_modules/.bin:$PATH"
# V8's compiled code of every module kept between processes: each test file and every command it
# spawns loads the same few hundred modules (a third less CPU to load the server's).
export NODE_COMPILE_CACHE="$PWD/node_modules/.cache/node-compile"
echo "test.sh: node $(node --version) ($(command -v node))"
bash scripts/services.sh up
step "services"
mapfile -t files < <(find test -name '*.test.ts' | sort)
[[ ${#files[@]} -gt 0 ]] || { echo "no test files found" >&2; exit 1; }
npx tsc -p tsconfig.check.json
step "type check"
if [[ -n $chromium_install ]]; then
  wait "$chromium_install" || { cat .test-times/chromium-install.log >&2; echo "apt-get install chromium failed" >&2; exit 1; }
  step "waiting for chromium"
fi
# A test may run 3 minutes at most (unless it says otherwise), and a file whose tests are done
# exits even if something it started still holds the event loop: a hang fails, never stalls CI.
# The price of --test-force-exit: the runner may lose the reports of a file's last tests (they ran;
# a failure still fails the file), so the counts are lower bounds (nodejs/node#64833: the same four
# files counted 311–331 tests with it, 331 every time without). Without it, a pass hangs: run side
# by side, test/events/relay-faults.test.ts keeps an amqplib heartbeat of a connection left open and
# test/infra/redis/close-connection.test.ts a BullMQ lock-extender timer and an ioredis reconnect
# timer of the instance it closed on a dead Redis (each exits when run alone).
# Beside the usual report, scripts/file-times.mjs writes each file's seconds to .test-times/<pass>.
mkdir -p .test-times
run_tests() {
  local pass=$1; shift
  TEST_TIMES_FILE=".test-times/$pass.txt" node --import ./support/typescript.mjs --test --test-concurrency=4 --test-timeout=180000 --test-force-exit \
    --test-reporter=tap --test-reporter-destination=stdout \
    --test-reporter=./scripts/file-times.mjs --test-reporter-destination=stdout "$@"
  step "$pass pass (${#@} files)"
}
run_tests redis-mariadb "${files[@]}"

# Second pass on a Redis Cluster (3 masters, 3 replicas): admission, sold-out answers (with and
# without a snapshot), rate limits, claim tokens and locks, pipeline, payments and expiry, waitlist,
# reconciliation, audit, order events (pub/sub), vouchers, HTTP protection, queue vouchers. Left out: tests of
# scripts on a raw connection and of one server's commands (MONITOR), the CLI and fault tests
# (their own servers), and the cluster's own tests (their own cluster).
on_cluster=(
  test/claims/seckill-claims.test.ts test/claims/token-buckets.test.ts test/claims/claim-tokens.test.ts test/claims/sql-claims.test.ts
  test/pipeline/pipeline.test.ts test/lifecycle/lifecycle.test.ts test/waitlist/waitlist.test.ts
  test/consistency/reconcile.test.ts test/consistency/audit.test.ts test/orders/orders-api.test.ts
  test/vouchers/vouchers.test.ts test/protection/http-limits.test.ts test/queue/join.test.ts test/queue/draw.test.ts
  test/claims/sold-out-snapshot.test.ts test/queue/prequeue-loss.test.ts
)
port=7400
dir="$PWD/.services/test-cluster"
trap 'bash scripts/redis-topology.sh cluster down --port $port --dir "$dir"; report' EXIT
nodes=$(bash scripts/redis-topology.sh cluster up --port $port --dir "$dir")
echo "second pass on a Redis Cluster: ${nodes}"
TEST_REDIS_CLUSTER_NODES=${nodes#REDIS_CLUSTER_NODES=} run_tests cluster "${on_cluster[@]}"

# Third pass on PostgreSQL: every file that touches the database (each its own database, as on
# MariaDB). Left out: files without a database, the Redis topology tests (Sentinel failovers,
# the cluster's own tests), whose database work is the one-server tests' own, the CLI's process
# tests but the demo's, the pages in a browser, the webhook receiver's outage, the identity
# provider's key rotation and the server's shutdown (their database work is the other files':
# the routes, the outbox, the pipeline), the fault campaign's cells (`npm run chaos` with
# CHAOS_DATABASE_SERVER=postgres://… runs them there), and the replicated databases' tests (their
# own PostgreSQL pair, Patroni cluster or Galera cluster in every pass).
declare -A not_on_postgres=()
for f in test/auth/tokens.test.ts test/config.test.ts test/console/claim-rates.test.ts test/ids/snowflake.test.ts \
  test/ids/worker-lease.test.ts test/infra/redis/keys.test.ts test/infra/redis/scripts/admit-script.test.ts \
  test/ops/grafana-dashboard.test.ts test/pipeline/stream-trim.test.ts test/pipeline/small-batch-gate.test.ts test/vouchers/segment-placement.test.ts \
  test/faults/sentinel-failover.test.ts test/faults/sentinel-failover-memory.test.ts test/infra/redis/cluster.test.ts \
  test/vouchers/segments.test.ts test/docs/configuration-doc.test.ts test/chaos/checker.test.ts \
  test/chaos/campaign-sentinel-partition.test.ts test/chaos/campaign-db-silent.test.ts test/chaos/campaign-clock-back.test.ts \
  test/infra/redis/stray-rejections.test.ts test/infra/redis/sentinel-reconnect.test.ts test/infra/redis/scripts/presence-script.test.ts \
  test/cli/cli.test.ts test/cli/serve-processes.test.ts test/cli/bench-cli.test.ts test/cli/bench-queue.test.ts test/client/client-schema.test.ts \
  test/web/docs.test.ts test/web/pages.test.ts test/web/store-external.test.ts test/web/store-lost.test.ts test/web/store-queue.test.ts \
  test/webhooks/webhook-outage.test.ts test/auth/jwks-refetch.test.ts test/faults/shutdown.test.ts test/infra/redis/mutex.test.ts \
  test/infra/db/postgres-pair.test.ts test/infra/db/database-failover.test.ts test/infra/db/lost-cancellation.test.ts test/chaos/campaign-db-primary-kill.test.ts \
  test/infra/db/patroni.test.ts test/infra/db/galera.test.ts test/chaos/campaign-db-switchover.test.ts test/ops/prometheus-rules.test.ts \
  test/chaos/patroni-hosts.test.ts test/chaos/campaign-db-primary-partition.test.ts test/web/console-charts.test.ts test/web/series.test.ts test/metrics/outbox-gauges.test.ts test/docs/zh-cn-docs.test.ts \
  test/tracing/spans.test.ts; do
  [[ -f $f ]] || { echo "scripts/test.sh names a missing file: $f" >&2; exit 1; }
  not_on_postgres[$f]=1
done
on_postgres=()
for f in "${files[@]}"; do [[ -n ${not_on_postgres[$f]:-} ]] || on_postgres+=("$f"); done
echo "third pass on PostgreSQL: ${#on_postgres[@]} files"
TEST_DATABASE_SERVER=${TEST_POSTGRES_SERVER:-postgres://postgres@127.0.0.1:5432} run_tests postgres "${on_postgres[@]}"
