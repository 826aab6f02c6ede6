// What a year of history costs the engine: the same measurements (measure.ts) on an empty store
// (the same live vouchers, no orders) and on a generated year (generate.ts), in alternating
// rounds on one private redis-server, then a table of medians and ratios (year / empty).
//   node --import tsx bench/history/run.ts --orders 1000000 [--database-server postgres://postgres@127.0.0.1:5432]
//        [--vouchers 20000] [--live 100] [--rounds 2] [--claims 20000] [--keep] [--year <url of a kept year>]
//        [--private-server mariadb|postgres [--buffer-pool 4G]]
// Both databases are created under names of their own and dropped at the end unless --keep. With
// --private-server they are on a database server of the bench's own (private-server.ts), which
// goes with them unless --keep.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createDb, dropDatabase } from '../../src/infra/db/database.js';
import { startPrivateRedis } from '../../support/private-redis.js';
import { assertFreshName, checkYear, generateYear } from './generate.js';
import { describeStore, type Figures, measureStore, type Sizes, type StoreRef } from './measure.js';
import { DEFAULT_BUFFER_POOL, parseKind, parseMiB, readServerSettings, settingsLine, startPrivateServer } from './private-server.js';
import { readFlags } from '../support/flags.js';
import { median } from '../support/stats.js';

const v = readFlags(
  {
    orders: 1_000_000,
    vouchers: 20_000,
    live: 100,
    'database-server': null,
    'private-server': null,
    'buffer-pool': DEFAULT_BUFFER_POOL,
    rounds: 2,
    claims: 20_000,
    connections: 64,
    expiries: 20_000,
    drain: 50_000,
    streams: 10_000,
    reads: 2_000,
    year: null,
    keep: false,
    json: null,
  },
  { orders: 0, claims: 100, expiries: 100, drain: 1_000, streams: 0, reads: 10 },
);
const sizes: Sizes = { claims: v.claims, connections: v.connections, expiries: v.expiries, drain: v.drain, streams: v.streams, reads: v.reads };
if (v['private-server'] && (v['database-server'] || v.year)) throw new Error('--private-server starts the server: give neither --database-server nor --year');
const privateServer = v['private-server']
  ? await startPrivateServer({ kind: parseKind(v['private-server']), bufferPoolMiB: parseMiB(v['buffer-pool']), keep: v.keep })
  : null;
const server = (privateServer?.url ?? v['database-server'] ?? 'mysql://root@127.0.0.1:3306').replace(/\/$/, '');
const names = { empty: `${server}/history_${process.pid}_empty`, year: v.year ?? `${server}/history_${process.pid}_year` };

/** Rows of the table: label, figure key, unit, which way is better, and the target on year / empty. */
const ROWS: [string, string, string, 'higher' | 'lower', string][] = [
  ['claims: answers/s', 'claimsPerS', '/s', 'higher', '≥ 0.90'],
  ['claims: p99', 'claimP99Ms', 'ms', 'lower', ''],
  ['claims: server CPU per admission', 'serverCpuUsPerAdmission', 'µs', 'lower', '≤ 1.10'],
  ['claims: all stored after the last answer', 'claimsStoredLagMs', 'ms', 'lower', ''],
  ['drain (pipeline, 16 vouchers)', 'drainPerS', 'orders/s', 'higher', '≥ 0.90'],
  ['payments', 'paymentsPerS', '/s', 'higher', '≥ 0.90'],
  ['payments: p99', 'paymentP99Ms', 'ms', 'lower', ''],
  ['payments: server CPU per payment', 'serverCpuUsPerPayment', 'µs', 'lower', ''],
  ['expiry (all due at once)', 'expiriesPerS', 'orders/s', 'higher', '≥ 0.90'],
  ['expiry: server + database CPU per due order', 'expiryCpuUsPerOrder', 'µs', 'lower', ''],
  ['GET /api/orders (long history): p50', 'listOrdersP50Ms', 'ms', 'lower', ''],
  ['GET /api/orders (long history): p99', 'listOrdersP99Ms', 'ms', 'lower', ''],
  ['GET stats of the hot voucher: p50', 'statsP50Ms', 'ms', 'lower', ''],
  ['GET stats of the hot voucher: p99', 'statsP99Ms', 'ms', 'lower', '≤ 5 ms'],
  ['reconcile the hot voucher', 'reconcileHotMs', 'ms', 'lower', '≈ small'],
  ['reconcile a small live voucher', 'reconcileSmallMs', 'ms', 'lower', ''],
  ['reconcile all', 'reconcileAllMs', 'ms', 'lower', ''],
  ['  vouchers reconciled', 'reconcileAllVouchers', '', 'lower', ''],
  ['audit of the hot voucher', 'auditHotMs', 'ms', 'lower', ''],
  ['start-up: spawn to ready', 'readyMs', 'ms', 'lower', ''],
  ['start-up: warm the live vouchers', 'warmMs', 'ms', 'lower', ''],
  ['RSS, idle after warm-up', 'rssIdleMiB', 'MiB', 'lower', ''],
  [`RSS with ${sizes.streams} event streams`, 'rssStreamsMiB', 'MiB', 'lower', ''],
];

const fmt = (n: number) => (Number.isNaN(n) ? 'failed' : Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));

function table(results: Record<'empty' | 'year', Figures[]>): string {
  const lines = ['| figure | empty | year | year / empty | target |', '| --- | ---: | ---: | ---: | --- |'];
  for (const [label, key, unit, , target] of ROWS) {
    const e = median(results.empty.map((r) => r[key]).filter((x) => x !== undefined));
    const y = median(results.year.map((r) => r[key]).filter((x) => x !== undefined));
    const rounds = (xs: Figures[]) => (xs.length > 1 ? ` (${xs.map((r) => fmt(r[key] ?? NaN)).join(', ')})` : '');
    lines.push(`| ${label} | ${fmt(e)} ${unit}${rounds(results.empty)} | ${fmt(y)} ${unit}${rounds(results.year)} | ${e ? (y / e).toFixed(2) : '-'} | ${target} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = performance.now();
  const { orders, vouchers, live, rounds } = v;
  await assertFreshName(names.empty);
  if (!v.year) await assertFreshName(names.year);
  const redis = await startPrivateRedis();
  const stores: StoreRef[] = [];
  try {
    console.log(`machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    const log = (line: string) => console.log(`  ${line}`);
    console.log(`generating the empty store (${live} live vouchers, no orders)`);
    await generateYear({ databaseUrl: names.empty, orders: 0, vouchers: live, live, redis: null, log });
    if (!v.year) {
      console.log(`generating the year (${orders} orders, ${vouchers} vouchers, ${live} live)`);
      const g = await generateYear({ databaseUrl: names.year, orders, vouchers, live, redis: null, log });
      console.log(`  ${g.ordersPerSecond} order rows/s; total ${g.seconds.total} s`);
      const problems = await checkYear(names.year);
      if (problems.length) throw new Error(`the generated year breaks the invariants: ${problems.join('; ')}`);
    }
    for (const label of ['empty', 'year'] as const) {
      const db = createDb(names[label], 1);
      try {
        stores.push({ label, databaseUrl: names[label], redisUrl: redis.url, ...(await describeStore(db)) });
      } finally {
        await db.destroy();
      }
    }
    const settings = await readServerSettings(names.year, redis.url);
    const ranOn = `${privateServer ? `a private ${privateServer.kind} server` : `the server at ${server}`}: ${settingsLine(settings)}`;
    console.log(`database: ${ranOn}`);
    const results: Record<'empty' | 'year', Figures[]> = { empty: [], year: [] };
    const raw: unknown[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which store goes first, so a drift of the machine's speed hits both alike.
      for (const store of r % 2 ? [...stores].reverse() : stores) {
        const at = performance.now();
        const load = os.loadavg()[0]!;
        const { figures, cpu, errors } = await measureStore(store, sizes, r);
        for (const e of errors) console.log(`  round ${r + 1} ${store.label}: FAILED ${e}`);
        results[store.label].push(figures);
        raw.push({ round: r, store: store.label, figures, cpu, errors, loadBefore: load, loadAfter: os.loadavg()[0] });
        console.log(`round ${r + 1} ${store.label}: ${Math.round((performance.now() - at) / 1000)} s; load ${load.toFixed(2)} → ${os.loadavg()[0]!.toFixed(2)}; other processes' CPU during claims ${cpu.claims?.other ?? '-'} s, drain ${cpu.drain?.other ?? '-'} s`);
      }
    }
    console.log(`\n${orders.toLocaleString('en-US')} orders over ${vouchers.toLocaleString('en-US')} vouchers (${live} live), ${sizes.claims} claims over ${sizes.connections} connections, ${sizes.expiries} expiries, drain of ${sizes.drain}; medians of ${rounds} round(s) (each round's figure in brackets)\n`);
    console.log(`database: ${ranOn}\n`);
    console.log(table(results));
    console.log(`\nwall ${Math.round((performance.now() - started) / 1000)} s`);
    const database = { server: privateServer ? 'private' : server, ...settings };
    if (v.json) writeFileSync(v.json, JSON.stringify({ argv: process.argv.slice(2), sizes, database, raw }, null, 2));
  } finally {
    await redis.stop();
    if (!v.keep) {
      await dropDatabase(names.empty).catch(() => undefined);
      if (!v.year) await dropDatabase(names.year).catch(() => undefined);
    }
  }
}

try {
  await main();
} finally {
  privateServer?.close();
}
