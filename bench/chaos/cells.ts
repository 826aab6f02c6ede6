// One cell of the fault campaign: a fault, a durability mode, a sale of some seconds. The engine
// runs as its own processes (bench/chaos/engine.ts) on servers of the cell's own; buyers claim
// through the fault (load.ts), the fault heals, the sale drains, and the checker (checker.ts) joins
// every answer with both stores. What a mode promises under a fault is the list of anomalies that
// must stay zero (PROMISES); the rest are measured and reported.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { settings } from '../../src/config.js';
import { createKeySpace } from '../../src/infra/redis/keys.js';
import { ROOT } from '../../support/processes.js';
import { startPrivateRedis, startReplicatedRedis } from '../../support/private-redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';
import { type Anomaly, check, formatLine, type Report, type Verdict, verdict } from './checker.js';
import { type Engine, startEngine } from './engine.js';
import { type ClaimOp, createRecorder } from './history.js';
import { clusterHosts, sentinelHosts } from './hosts.js';
import { readBack, startLoad } from './load.js';
import { readStores } from './stores.js';
import { ensureFaketime } from './faketime.js';
import { type DatabaseKind, startFailingDatabase } from './databases.js';

export type Mode = 'memory' | 'fsync' | 'replica';
export const MODES: readonly Mode[] = ['memory', 'fsync', 'replica'];

/** What every mode promises under every fault. */
const ALWAYS: readonly Anomaly[] = ['oversold', 'duplicates', 'ids-twice', 'limit-breach', 'stock-drift', 'quota-drift', 'inflight-left'];
/** What a broken acknowledgement is: a 202 never stored or stored failed, a buyer acked past the limit, a replay with another id. */
const ACKNOWLEDGEMENTS: readonly Anomaly[] = ['acked-lost', 'acked-failed', 'limit-breach-acked', 'replay-mismatch', 'processing-forever'];

/** A fault as a cell sees it: what the engine needs to reach its servers, and the fault itself. */
interface Staged {
  env: Record<string, string>;
  /** A command prefix for one API process (a wall clock of its own). */
  wrap?: (index: number) => string[] | null;
  /** Redis the checker reads after the heal (the current master), if it can. */
  redisUrl(): Promise<string | undefined>;
  /** `sale`: the voucher on sale and the engine's key prefix, for a fault aimed at what serves it. */
  inject(origins: string[], sale: { voucherId: string; prefix: string }): Promise<void>;
  heal(): Promise<void>;
  /** Said in the cell's line: what the fault did (e.g. how long the failover took), asked of the API processes if need be. */
  notes(origins: string[]): Promise<string[]>;
  /** How long the failover took after the fault (ms), where the fault makes one; null otherwise. */
  failoverMs?(): number | null;
  stop(): Promise<void>;
}

export interface Fault {
  name: string;
  about: string;
  /** How long the fault lasts before it heals (ms). */
  holdMs: number;
  /** The anomalies each mode promises to keep at zero under this fault. */
  promise(mode: Mode): readonly Anomaly[];
  /** `database`: the replicated database of a database fault (databases.ts); the others ignore it. */
  stage(mode: Mode, dir: string, cell: { database: DatabaseKind }): Promise<Staged>;
}

const DATABASE_SERVER = process.env.CHAOS_DATABASE_SERVER || 'mysql://root@127.0.0.1:3306';
const SHARED_REDIS = process.env.CHAOS_REDIS_URL || 'redis://127.0.0.1:6379';

/** The Sentinel master cut from its replicas and sentinels (not from the API) or paused, then healed. */
function sentinelFault(name: string, about: string, holdMs: number, how: 'partition' | 'pause' | 'kill-all'): Fault {
  return {
    name,
    about,
    holdMs,
    // An isolated or paused master that went on taking admissions loses them at its demotion:
    // only `replica` (WAIT, min-replicas-to-write) promises that an acknowledgement survives. When
    // every Redis process dies at once, only `fsync` (append-only file, fsync before the answer) does.
    promise: (mode) => (mode === (how === 'kill-all' ? 'fsync' : 'replica') ? [...ALWAYS, ...ACKNOWLEDGEMENTS] : ALWAYS),
    async stage(mode, dir) {
      const topology = await sentinelHosts(dir, { minReplicas: mode === 'replica' ? 1 : 0, aof: mode === 'fsync' });
      let injectedAt = 0;
      let promotedAfterMs: number | null = null;
      let masterPid = 0;
      const watchFailover = async () => {
        try {
          await waitFor('a replica promoted', async () => (await topology.master().catch(() => 'm')) !== 'm', holdMs + 10_000, 100);
          promotedAfterMs = Date.now() - injectedAt;
        } catch {
          // no failover within the hold: said in the notes
        }
      };
      return {
        env: { REDIS_SENTINELS: topology.sentinels, REDIS_SENTINEL_NAME: 'seckill', ...(mode === 'replica' ? { ADMIT_WAIT_TIMEOUT_MS: '200' } : {}) },
        async redisUrl() {
          const master = await topology.master().catch(() => 'unknown');
          return master === 'unknown' ? undefined : `redis://${topology.hosts.address(master)}:6379`;
        },
        async inject() {
          injectedAt = Date.now();
          if (how === 'partition') await topology.hosts.cut('m', topology.others);
          else if (how === 'kill-all') return void (await topology.killAll());
          else {
            masterPid = await topology.pid('m');
            process.kill(masterPid, 'SIGSTOP');
          }
          void watchFailover();
        },
        async heal() {
          if (how === 'partition') await topology.hosts.heal();
          else if (how === 'kill-all') await topology.restartAll();
          else process.kill(masterPid, 'SIGCONT');
        },
        notes: async () => [promotedAfterMs === null ? 'no failover' : `failover after ${(promotedAfterMs / 1000).toFixed(1)} s`],
        failoverMs: () => promotedAfterMs,
        stop: () => topology.hosts.down(),
      };
    },
  };
}

/** One master of a Redis Cluster cut from every other node (its replica among them), not from the API. */
const clusterPartition: Fault = {
  name: 'cluster-partition',
  about: "the master serving the sale's voucher, in a 3-master Redis Cluster with 2 replicas each, cut from the other nodes (not from the API) for 8 s",
  holdMs: 8_000,
  promise: (mode) => (mode === 'replica' ? [...ALWAYS, ...ACKNOWLEDGEMENTS] : ALWAYS),
  async stage(mode, dir) {
    const topology = await clusterHosts(dir, { minReplicas: mode === 'replica' ? 1 : 0, aof: mode === 'fsync' });
    let injectedAt = 0;
    let failoverMs: number | null = null;
    const shards = Number(settings.shards.default);
    return {
      env: { REDIS_CLUSTER_NODES: topology.nodes, ...(mode === 'replica' ? { ADMIT_WAIT_TIMEOUT_MS: '200' } : {}) },
      redisUrl: async () => undefined, // the checker reads one server; the database is its evidence here
      async inject(_origins, { voucherId, prefix }) {
        const isolated = await topology.masterOf(createKeySpace(prefix, shards).voucher(BigInt(voucherId)));
        injectedAt = Date.now();
        await topology.hosts.cut(isolated, topology.othersThan(isolated));
        void waitFor('the isolated master replaced', () => topology.failedOver(isolated), 20_000, 200).then(
          () => (failoverMs = Date.now() - injectedAt),
          () => undefined,
        );
      },
      heal: () => topology.hosts.heal(),
      notes: async () => [failoverMs === null ? 'no failover' : `failover after ${(failoverMs / 1000).toFixed(1)} s`],
      failoverMs: () => failoverMs,
      stop: () => topology.hosts.down(),
    };
  },
};

/**
 * Redis for a fault that is not about Redis: the shared server under memory, a server of the
 * cell's own where the mode needs one (fsync: an append-only file fsynced always; replica: a master
 * that refuses writes without its replica).
 */
async function redisFor(mode: Mode): Promise<{ url: string; stop(): Promise<void> }> {
  if (mode === 'fsync') return startPrivateRedis({ appendfsync: 'always' });
  if (mode === 'replica') return startReplicatedRedis({ minReplicas: 1 });
  return { url: SHARED_REDIS, stop: async () => undefined };
}

/** The database stops answering without closing anything: a proxy in front of it holds every byte. */
const databaseSilent: Fault = {
  name: 'db-silent',
  about: 'the database stops answering for the hold, its sockets left open (a proxy holds every byte)',
  holdMs: 20_000,
  promise: () => [...ALWAYS, ...ACKNOWLEDGEMENTS],
  async stage(mode) {
    const redis = await redisFor(mode);
    const server = new URL(DATABASE_SERVER);
    const proxy = new TcpProxy(server.hostname, Number(server.port || (server.protocol.startsWith('postgres') ? 5432 : 3306)));
    const port = await proxy.start();
    server.port = String(port);
    let probes: Promise<string> = Promise.resolve('');
    return {
      env: { REDIS_URL: redis.url, CHAOS_DATABASE_SERVER: server.toString().replace(/\/$/, '') },
      redisUrl: async () => redis.url,
      async inject(origins) {
        proxy.stall();
        // What a load balancer sees meanwhile: /readyz must answer, and say the database is down.
        probes = (async () => {
          await new Promise((r) => setTimeout(r, 2_000));
          const started = Date.now();
          const res = await request(`${origins[0]}/readyz`, { headersTimeout: 10_000 }).catch(() => null);
          const body = res ? ((await res.body.json().catch(() => ({}))) as { database?: { state?: string } }) : {};
          return `/readyz ${res?.statusCode ?? 'no answer'} in ${Date.now() - started} ms, database ${body.database?.state ?? '?'}`;
        })();
      },
      heal: async () => proxy.resume(),
      notes: async () => [await probes],
      stop: async () => {
        await proxy.stop();
        await redis.stop();
      },
    };
  },
};

/**
 * The database fails over under the sale: the cell's own replicated database (databases.ts),
 * reached through one address the engine knows as its database. The fault comes `holdMs` after
 * the sale's start (where replication is asynchronous, the standby stops receiving at the start
 * of that hold: what the primary commits meanwhile is lost with it); every acknowledged order must
 * be stored all the same.
 */
function databaseFault(name: string, about: string, how: 'kill' | 'switchover' | 'partition'): Fault {
  return {
    name,
    about,
    holdMs: 2_000,
    promise: () => [...ALWAYS, ...ACKNOWLEDGEMENTS],
    async stage(mode, _dir, { database }) {
      const redis = await redisFor(mode);
      // A partition needs each server on a test host of its own.
      const kind = how === 'partition' ? 'patroni-hosts' : database;
      const db = await startFailingDatabase(kind).catch(async (err: unknown) => {
        await redis.stop();
        throw err;
      });
      let failoverMs: number | null = null;
      let healed = '';
      return {
        env: { REDIS_URL: redis.url, CHAOS_DATABASE_SERVER: db.server },
        redisUrl: async () => redis.url,
        async inject() {
          if (how === 'kill') await db.fallBehind();
          // The cut lasts the new primary's election (Patroni's ttl) and the hold.
          if (how === 'partition') failoverMs = await db.partitionPrimary();
        },
        async heal() {
          if (how === 'partition') healed = await db.heal();
          else failoverMs = how === 'kill' ? await db.killPrimary() : await db.switchover();
        },
        async notes(origins) {
          // Each API process runs workers; the one that noticed the new server first stored the loss again.
          const counted = await Promise.all(origins.map(async (o) => /^seckill_orders_restored_total (\d+)/m.exec(await (await request(`${o}/metrics`)).body.text())?.[1]));
          const restored = counted.reduce((n, c) => n + Number(c ?? 0), 0);
          return [kind, ...db.notes(), `a write on the new primary ${Math.round(failoverMs ?? 0)} ms after the ${how}`, ...(healed ? [healed] : []), `${restored} lost order${restored === 1 ? '' : 's'} stored again`];
        },
        failoverMs: () => failoverMs,
        stop: async () => {
          await db.stop();
          await redis.stop();
        },
      };
    },
  };
}

/** One of two API processes has its wall clock set 5 s back mid-sale (libfaketime; its monotonic clock is left alone). */
const clockBack: Fault = {
  name: 'clock-back',
  about: "one API process's wall clock jumps 5 s back (and stays there)",
  holdMs: 5_000,
  promise: () => [...ALWAYS, ...ACKNOWLEDGEMENTS],
  async stage(mode, dir) {
    const library = await ensureFaketime();
    const redis = await redisFor(mode);
    const offsetFile = join(dir, 'faketime');
    writeFileSync(offsetFile, '+0s\n');
    return {
      env: { REDIS_URL: redis.url },
      wrap: (i) =>
        i === 1 ? ['env', `LD_PRELOAD=${library}`, `FAKETIME_TIMESTAMP_FILE=${offsetFile}`, 'FAKETIME_NO_CACHE=1', 'FAKETIME_DONT_FAKE_MONOTONIC=1'] : null,
      redisUrl: async () => redis.url,
      inject: async () => writeFileSync(offsetFile, '-5s\n'),
      heal: async () => undefined, // a clock that went back stays back: the process lives on with it
      // Proof that the jump reached the process's Date.now(): Node's HTTP server dates its answers
      // with it, and the id generator counts the jump it saw.
      async notes(origins) {
        const dated = async (origin: string) => Date.parse((await request(`${origin}/healthz`)).headers.date as string);
        const [own, faked] = await Promise.all([dated(origins[0]!), dated(origins[1]!)]);
        const metrics = await (await request(`${origins[1]!}/metrics`)).body.text();
        const jumps = /^seckill_clock_backwards_total (\d+)/m.exec(metrics)?.[1] ?? '?';
        return [`API 2's clock ${((faked - own) / 1000).toFixed(0)} s from API 1's`, `its clock went back ${jumps} time(s) (seckill_clock_backwards_total)`];
      },
      stop: () => redis.stop(),
    };
  },
};

export const FAULTS: readonly Fault[] = [
  sentinelFault('sentinel-partition', 'the Sentinel master cut from its replicas and sentinels, not from the API, for 8 s', 8_000, 'partition'),
  sentinelFault('master-pause', 'the Sentinel master paused (SIGSTOP) for 6 s, past the failover, then resumed', 6_000, 'pause'),
  sentinelFault('kill-all', 'every Redis process (master, replicas, sentinels) killed -9 at once, started again 3 s later', 3_000, 'kill-all'),
  clusterPartition,
  databaseSilent,
  databaseFault('db-primary-kill', 'the database primary SIGKILLed (a standby 2 s behind where replication is asynchronous); another server promoted and the address switched to it', 'kill'),
  databaseFault('db-switchover', 'a planned switchover of the database to another server', 'switchover'),
  databaseFault('db-primary-partition', 'the PostgreSQL primary under Patroni cut from its peers and from etcd (not from HAProxy) until another is elected, then healed', 'partition'),
  clockBack,
];

export interface CellResult {
  fault: string;
  mode: Mode;
  report: Report;
  verdict: Verdict;
  auditOk: boolean;
  /** Longest time without a settled answer while buyers were claiming (ms). */
  longestGapMs: number;
  /** From the heal to the drain: every admitted order stored (ms). */
  recoveredMs: number;
  /** How long the failover took, where the fault makes one (ms). */
  failoverMs: number | null;
  line: string;
}

export interface CellOptions {
  seconds: number;
  /** How long the fault lasts (ms); the fault's own length by default. */
  holdMs?: number;
  /** Claims started per second. */
  rate?: number;
  /** The replicated database a database fault runs on (lagging-standby by default). */
  database?: DatabaseKind;
  log?: (line: string) => void;
}

/**
 * The longest stretch without a settled answer (an acknowledgement or a refusal the buyer can act
 * on: anything but 429, 503 and no answer), from the first claim to the last one sent.
 */
function longestGap(claims: ClaimOp[]): number {
  const settled = claims.filter((c) => c.status !== null && c.status !== 429 && c.status !== 503).map((c) => c.doneAt);
  const points = [Math.min(...claims.map((c) => c.at)), ...settled, Math.max(...claims.map((c) => c.at))].sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < points.length; i++) gap = Math.max(gap, points[i]! - points[i - 1]!);
  return gap;
}

export async function runCell(fault: Fault, mode: Mode, { seconds, holdMs = fault.holdMs, rate = 200, database = 'lagging-standby', log = () => undefined }: CellOptions): Promise<CellResult> {
  const dir = join(ROOT, '.services', 'chaos', `${fault.name}-${mode}`); // kept for a look until the cell runs again
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const staged = await fault.stage(mode, dir, { database });
  let engine: Engine | null = null;
  try {
    const { CHAOS_DATABASE_SERVER: databaseServer = DATABASE_SERVER, ...env } = staged.env;
    engine = await startEngine({
      label: `${fault.name}_${mode}`,
      env: { ...env, ADMIT_DURABILITY: mode },
      databaseServer,
      apis: 2,
      wrap: staged.wrap,
    });
    log(`${fault.name}/${mode}: engine up`);
    const durationMs = seconds * 1_000;
    // Demand above supply: the sale sells out in the last quarter, so sold-out answers are tested too.
    const stock = Math.max(50, Math.floor(rate * seconds * 0.75));
    const now = Date.now();
    const voucherId = await engine.createVoucher({ title: `chaos ${fault.name} ${mode}`, kind: 'seckill', stock, beginAt: new Date(now - 1_000).toISOString(), endAt: new Date(now + 3_600_000).toISOString(), perUserLimit: 1 });
    const recorder = createRecorder(join(dir, 'history.jsonl'));
    const load = startLoad({ origins: engine.apis.map((a) => a.origin), voucherId, recorder, firstUser: 1_000, rate, durationMs, patienceMs: holdMs + 15_000 });
    // The fault comes once the sale runs, and heals while buyers still claim.
    const injectAt = Math.min(2_000, durationMs / 4);
    await new Promise((r) => setTimeout(r, injectAt));
    await staged.inject(engine.apis.map((a) => a.origin), { voucherId, prefix: engine.prefix });
    log(`${fault.name}/${mode}: fault injected`);
    await new Promise((r) => setTimeout(r, holdMs));
    await staged.heal();
    const healedAt = Date.now();
    log(`${fault.name}/${mode}: healed`);
    await load.done;
    await load.close();
    const claims = recorder.history().filter((op): op is ClaimOp => op.op === 'claim');
    const acked = claims.filter((c) => c.outcome === 'ok');
    log(`${fault.name}/${mode}: ${claims.length} claims, ${acked.length} acked; draining`);
    const drainStarted = Date.now();
    await engine.drained(voucherId, 60_000).catch(() => undefined);
    const recoveredMs = Date.now() - healedAt;
    // The operator's audit, reconciling first, within 30 s of the drain.
    let audit = { ok: false, detail: '' };
    while (Date.now() - drainStarted < 30_000 && !(audit = await engine.audit(voucherId)).ok) await new Promise((r) => setTimeout(r, 2_000));
    const ackedOrders = [...new Map(acked.map((c) => [c.orderId!, { orderId: c.orderId!, userId: c.userId }])).values()];
    await readBack(engine.apis.map((a) => a.origin), recorder, ackedOrders);
    await recorder.close();
    const stores = await readStores({ databaseUrl: engine.databaseUrl, redisUrl: await staged.redisUrl(), prefix: engine.prefix, voucherIds: [voucherId] });
    const report = check(recorder.history(), stores, { releaseLagMs: holdMs, soldOutGraceMs: Number(engine.env.SOLD_OUT_CACHE_MS ?? settings.soldOutCacheMs.default) });
    const v = verdict(report, fault.promise(mode));
    const longestGapMs = longestGap(claims);
    // One claim's own wait for its answer (a retry is another claim): DB_STATEMENT_TIMEOUT_MS and
    // REDIS_COMMAND_TIMEOUT_MS bound it.
    const longestWaitMs = Math.max(0, ...claims.filter((c) => c.status !== null).map((c) => c.doneAt - c.at));
    const notes = [...(await staged.notes(engine.apis.map((a) => a.origin))), `longest gap ${(longestGapMs / 1000).toFixed(1)} s`, `longest answer ${(longestWaitMs / 1000).toFixed(1)} s`, `drained ${(recoveredMs / 1000).toFixed(1)} s after the heal`, `audit ${audit.ok ? 'clean' : 'NOT clean'}`];
    const line = `${formatLine(`${fault.name}/${mode}`, report)} (${notes.join(', ')})${v.ok && audit.ok ? '' : ' — BROKEN PROMISE'}`;
    if (!audit.ok) log(`${fault.name}/${mode}: audit: ${audit.detail}`);
    return { fault: fault.name, mode, report, verdict: v, auditOk: audit.ok, longestGapMs, recoveredMs, failoverMs: staged.failoverMs?.() ?? null, line };
  } finally {
    await engine?.stop(dir).catch(() => undefined);
    await staged.stop().catch(() => undefined);
  }
}

