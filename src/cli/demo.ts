// `seckill demo`: a real flash sale on this machine, end to end. It starts the API and the order
// pipeline in this process, creates a voucher, lets many distinct buyers (each with their own
// token, some double-clicking with the same Idempotency-Key) race for it over HTTP, waits until
// MariaDB holds every admitted order, and checks the invariants against both stores.
import { performance } from 'node:perf_hooks';
import { buildApp } from '../app.js';
import { auditVoucher } from '../audit/check-voucher.js';
import type { Config } from '../config.js';
import { createContainer } from '../container.js';
import { createLogger } from '../logger.js';
import { JsonClient } from './http-client.js';

export interface DemoOptions {
  big?: boolean;
  stock?: string;
  buyers?: string;
}

const fmt = (n: number) => n.toLocaleString('en-US');

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;
}

/** The demo keeps its own database and key prefix so it never touches real data. */
function demoConfig(config: Config): Config {
  const url = new URL(config.databaseUrl);
  url.pathname = `${url.pathname.slice(1)}_demo`;
  return { ...config, databaseUrl: url.toString(), redisPrefix: `${config.redisPrefix}-demo`, port: 0, logLevel: 'warn' };
}

export async function demo(baseConfig: Config, options: DemoOptions): Promise<void> {
  const stock = Number(options.stock ?? (options.big ? 10_000 : 100));
  const buyers = Number(options.buyers ?? (options.big ? 100_000 : 1_000));
  const config = demoConfig(baseConfig);
  const log = createLogger(config.logLevel);
  const container = await createContainer(config, log, { migrate: true });
  const app = await buildApp(container.appDeps);
  await container.startWorkers();
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new JsonClient(address, 256);
  const tty = process.stdout.isTTY;

  try {
    const admin = await container.tokens.sign({ userId: 1n, admin: true }, 600);
    const created = await client.request('POST', '/api/vouchers', {
      token: admin,
      body: { title: 'Demo flash sale', kind: 'seckill', stock, beginAt: new Date(Date.now() - 1000).toISOString(), endAt: new Date(Date.now() + 600_000).toISOString() },
    });
    if (created.status !== 201) throw new Error(`could not create the voucher: ${JSON.stringify(created.body)}`);
    const voucherId = String(created.body.id);
    console.log(`\nFlash sale: ${fmt(stock)} units, ${fmt(buyers)} buyers (1 unit each), API at ${address}, voucher ${voucherId}`);

    // Every buyer has a token; one in five double-clicks (same Idempotency-Key twice).
    const tokens = await Promise.all(Array.from({ length: buyers }, (_, i) => container.tokens.sign({ userId: BigInt(100_000 + i), admin: false }, 600)));
    const requests = tokens.flatMap((token, i) => {
      const one = { token, key: `demo-${i}` };
      return i % 5 === 0 ? [one, one] : [one];
    });
    for (let i = requests.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [requests[i], requests[j]] = [requests[j]!, requests[i]!];
    }

    const outcomes = new Map<string, number>();
    const admittedBy = new Map<string, string>();
    const latencies: number[] = [];
    let done = 0;
    const started = performance.now();
    const progress = setInterval(() => {
      const line = `  ${fmt(done)}/${fmt(requests.length)} requests · ${fmt(admittedBy.size)} admitted · ${fmt(Math.max(0, stock - admittedBy.size))} left`;
      if (tty) process.stdout.write(`\r${line}   `);
    }, 100);
    let next = 0;
    await Promise.all(
      Array.from({ length: 256 }, async () => {
        while (next < requests.length) {
          const { token, key } = requests[next++]!;
          const t0 = performance.now();
          const res = await client.request('POST', `/api/vouchers/${voucherId}/orders`, { token, body: {}, headers: { 'idempotency-key': key } });
          latencies.push(performance.now() - t0);
          const outcome = res.status === 202 ? '202 processing' : String(res.body.code ?? res.status);
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          if (res.status === 202) admittedBy.set(String(res.body.orderId), key);
          done++;
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    clearInterval(progress);
    if (tty) process.stdout.write('\n');
    latencies.sort((a, b) => a - b);
    console.log(
      `  ${fmt(requests.length)} requests in ${elapsed.toFixed(2)} s (${fmt(Math.round(requests.length / elapsed))} req/s), ` +
        `latency p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
    );
    console.log(`  answers: ${[...outcomes].map(([k, n]) => `${k} ${fmt(n)}`).join(' · ')}`);
    console.log(`  distinct orders admitted: ${fmt(admittedBy.size)} (a double-click gets the same order id back)`);

    const drainStart = performance.now();
    while ((await container.inflight.ofVoucher(BigInt(voucherId))).length > 0) {
      if (performance.now() - drainStart > 120_000) throw new Error('orders were not stored within 2 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
    console.log(`  every admitted order stored in MariaDB ${((performance.now() - drainStart) / 1000).toFixed(2)} s after the last answer`);

    const audit = await auditVoucher(container, BigInt(voucherId), { admitted: [...admittedBy.keys()], drained: true });
    if (!audit) throw new Error('voucher vanished');
    console.log(`\nVerdict from Redis and MariaDB:`);
    for (const c of audit.checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.id} ${c.name}${c.ok ? '' : `: ${c.problems.join('; ')}`}`);
    const oversold = Math.max(0, audit.sold - audit.initialStock);
    const lost = audit.checks.find((c) => c.id === 'I3')!.problems.length;
    console.log(
      `  sold ${fmt(audit.sold)}/${fmt(audit.initialStock)} · DB stock ${audit.dbStock} · Redis stock ${audit.redisStock} · ` +
        `oversold ${oversold} · lost ${lost} · orders ${JSON.stringify(audit.orders)}`,
    );
    console.log(audit.ok ? '\nPASS: no oversell, nothing lost, no duplicates.\n' : '\nFAIL: see the checks above.\n');
    process.exitCode = audit.ok ? 0 : 1;
  } finally {
    client.close();
    await app.close();
    await container.close();
  }
}
