// A sale through a Sentinel failover: the master dies (kill -9) once a quarter of the units are
// sold, buyers retry through it, and the service follows the promoted replica by itself. Shared by
// the two durability policies' test files (separate files: each gets its own time budget, and they
// run side by side).
import type { TestContext } from 'node:test';
import { createVoucher, startTestApp, type TestApp } from './helpers.js';
import { waitForDrain } from './invariants.js';
import { startSentinelTopology } from '../../support/private-redis.js';
import { assertContractAnswers, injectClaims, type Sale, startSale } from './sale.js';
import { tolerateStrayRedisRejections } from './stray-rejections.js';
import { waitFor } from '../../support/wait.js';

const STOCK = 2_000;
const BUYERS = 3_000;

export async function failoverSale(label: string, durability: 'replica' | 'memory', ctx: TestContext): Promise<{ t: TestApp; v: Record<string, any>; sale: Sale }> {
  // Progress on stderr, shown even if the file runs out of time (diagnostics come only at the end).
  const startedAt = performance.now();
  const step = (what: string) => process.stderr.write(`${label}: ${what} at ${Math.round(performance.now() - startedAt)} ms\n`);
  tolerateStrayRedisRejections(); // the killed master's connections: writes nobody holds, refused
  const topology = await startSentinelTopology({ minReplicas: durability === 'replica' ? 1 : 0 });
  step('topology up');
  // The app's warnings and errors of the last moments go into a failure's message: a failover
  // that goes wrong under load shows what the service saw, not only the topology.
  const logs = recentLines(30, startedAt);
  const t = await startTestApp(ctx, label, {
    REDIS_SENTINELS: topology.sentinels,
    REDIS_SENTINEL_NAME: topology.name,
    ADMIT_DURABILITY: durability,
    ADMIT_WAIT_TIMEOUT_MS: '200',
    // Settlements the replica missed leave entries pending on the new master: taken over soon.
    CLAIM_IDLE_MS: '2000',
    RECONCILE_INTERVAL_MS: '1000',
    // A buyer retries through the whole failover; the per-buyer bucket would answer them 429.
    BUCKET_USER_RATE: '0',
    LOG_LEVEL: 'warn',
  }, undefined, logs);
  ctx.after(async () => {
    step('closing');
    await topology.stop();
    step('topology down');
  }); // after hooks run in order: the app closes first
  step('app started');
  // A failure says what the topology looked like, what the buyers were answered since the kill and
  // what the service logged (times in ms since the start), not only which wait ran out.
  let sale: Sale | undefined;
  let killedAt = Infinity;
  const context = async () =>
    [
      await topology.describe(),
      killedAt === Infinity ? 'the master not killed yet' : `killed at ${Math.round(killedAt - startedAt)} ms; answers since: ${answersSince(sale!, killedAt, startedAt)}`,
      `the service's last warnings:\n${logs.text() || '(none)'}`,
    ].join('\n');
  const explained = async <T>(step: Promise<T>): Promise<T> => {
    try {
      return await step;
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${await context()}`);
    }
  };
  await t.c.startWorkers();
  const v = await createVoucher(t, { stock: STOCK });
  // Buyers retry for as long as a failover takes (down-after 1 s, then the election), within bounds.
  // Every wait is bounded so that a failover that never happens fails the test with the topology's
  // state well inside the file's time budget (a file that runs out of time loses its output).
  sale = startSale({ send: injectClaims(t, v.id), firstUser: 1, buyers: BUYERS, concurrency: 100, retries: 100, retryPauseMs: 100, retryForMs: 25_000 });
  await explained(waitFor('a quarter of the units admitted', () => sale.answers.filter((a) => a.status === 202).length >= STOCK / 4, 15_000));
  step('a quarter sold; killing the master');
  await topology.killMaster();
  killedAt = performance.now();
  await sale.done;
  step('sale over');
  ctx.diagnostic(`sale over ${Math.round(performance.now() - killedAt)} ms after the kill`);
  if (sale.admitted(killedAt).length === 0) throw new Error(`no admission after the failover\n${await context()}`);
  await explained(Promise.resolve().then(() => assertContractAnswers(sale)));
  // While the client reconnects, ROLE fails at once (no offline queue): ask again.
  const role = () => t.c.redis.role().then(([r]) => r, () => 'reconnecting');
  await explained(waitFor('the service to write to the promoted replica', async () => (await role()) === 'master', 10_000));
  step('writing to the promoted replica');
  // On a quiet box the backlog is stored within a second of this; 30 s bounds the tail seen when
  // the whole suite runs beside it (17.7 s once), sentinels of a loaded box failing over again.
  await explained(waitForDrain(t.c, v.id, 30_000));
  step('drained');
  // Whatever the new master missed (a settlement, an admission under memory) is drift that
  // reconciliation repairs toward the database.
  // Reconciled now and then by the schedule; here also on demand (as an operator would), so the
  // wait does not depend on when the schedule's next run comes after the failover.
  let problems = '';
  let report = '';
  await explained(
    waitFor(
      () => `both stores to agree (${problems}; last reconciliation: ${report})`,
      async () => {
        report = JSON.stringify(await t.c.reconciler.reconcileVoucher(BigInt(v.id)).catch((err: Error) => err.message));
        const audit = await t.c.audit(BigInt(v.id), { drained: true }).catch((err: Error) => err);
        if (audit instanceof Error) return void (problems = audit.message);
        problems = JSON.stringify(audit?.checks.filter((c) => !c.ok).map((c) => [c.id, c.problems.slice(0, 3)]));
        return audit?.ok;
      },
      25_000,
      500,
    ),
  );
  step('both stores agree');
  return { t, v, sale };
}

/** Occurrences by kind: how many, and first and last when (ms since `startedAt`), most recent kind last; `keep` kinds at most. */
function tally(startedAt: number, keep = Infinity) {
  const kinds = new Map<string, { count: number; first: number; last: number }>();
  return {
    add(kind: string, when = performance.now()) {
      const at = Math.round(when - startedAt);
      const known = kinds.get(kind);
      kinds.delete(kind); // re-inserted: the map's order is that of each kind's last occurrence
      kinds.set(kind, { count: (known?.count ?? 0) + 1, first: known?.first ?? at, last: at });
      if (kinds.size > keep) kinds.delete(kinds.keys().next().value!);
    },
    lines: () => [...kinds].map(([kind, { count, first, last }]) => `${count}× at ${first}–${last} ms: ${kind}`),
  };
}

/** A log destination for a failure's message: the service's lines by message and error, the `size` kinds seen last. A flood of one warning hides nothing else. */
function recentLines(size: number, startedAt: number): { write(line: string): void; text(): string } {
  const seen = tally(startedAt, size);
  return {
    write(line) {
      let kind = line.slice(0, 200);
      try {
        const { msg, err, error, connection } = JSON.parse(line) as { msg?: string; err?: { message?: string }; error?: string; connection?: string };
        kind = [msg, connection, err?.message ?? error].filter(Boolean).join(' · ').slice(0, 300);
      } catch {} // not JSON: the line's start is its kind
      seen.add(kind);
    },
    text: () => seen.lines().join('\n'),
  };
}

/** The buyers' answers since `since` (performance.now() time), by status and code. */
function answersSince(sale: Sale, since: number, startedAt: number): string {
  const answers = tally(startedAt);
  for (const a of sale.answers) if (a.at >= since) answers.add(`${a.status} ${a.code ?? a.error ?? ''}`.trim(), a.at);
  return answers.lines().join('; ') || 'none';
}
