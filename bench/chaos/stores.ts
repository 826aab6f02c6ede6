// Both stores of the engine as the checker sees them, read after the heal and the drain: the
// database's vouchers, orders and held units, and (optionally) Redis's stock, buyer counts and
// in-flight records. Read straight from mysql2 / pg / ioredis, by the table and key names the
// engine documents (docs/design.md, "Redis layout"; the migrations), never through the engine's
// own code: the checker must not trust what it checks.
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { keysMatching } from '../../support/redis-keys.js';

export interface StoredVoucher {
  id: string;
  kind: string;
  initialStock: number;
  stock: number;
  perUserLimit: number;
  /** Shards of the stock segments ("3,9,14"), null for one segment. */
  segmentShards: string | null;
}

export interface StoredOrder {
  id: string;
  voucherId: string;
  userId: string;
  quantity: number;
  status: string;
  failureReason: string | null;
  idempotencyKey: string | null;
  /** Last status change (ms, the database's clock): for a released or failed order, when its units came back. */
  updatedAt: number;
}

/** A `user_quantities` row: the units the database says a buyer holds. */
export interface HeldUnits {
  voucherId: string;
  userId: string;
  quantity: number;
}

export interface RedisVoucher {
  voucherId: string;
  /** Σ stock over the voucher's segments; null when a segment's hash (or its stock) is missing. */
  stock: number | null;
  /** userId → units, summed over the segments. */
  buyers: Record<string, number>;
  /** In-flight records (admitted, not stored yet) of the voucher, over every shard. */
  inflight: number;
}

/** A snapshot of both stores; plain JSON, so a campaign can save it beside its history. */
export interface Stores {
  vouchers: StoredVoucher[];
  orders: StoredOrder[];
  userQuantities: HeldUnits[];
  /** null: Redis was not read. */
  redis: RedisVoucher[] | null;
}

export interface StoresTarget {
  /** mysql:// (or mariadb://) or postgres:// (or postgresql://), naming the database. */
  databaseUrl: string;
  /** A single Redis server (a Sentinel's current master, say); left out, Redis is not read. */
  redisUrl?: string;
  /** The engine's REDIS_PREFIX (default `sk`). */
  prefix?: string;
  voucherIds: readonly string[];
}

type Row = Record<string, unknown>;

interface SqlReader {
  /** Executes `statement`, whose `?` are bound to `params` in order. */
  all(statement: string, params: readonly string[]): Promise<Row[]>;
  close(): Promise<void>;
}

async function connectSql(databaseUrl: string): Promise<SqlReader> {
  const u = new URL(databaseUrl);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  const server = { host: u.hostname, user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database };
  if (u.protocol === 'mysql:' || u.protocol === 'mariadb:') {
    const conn = await mysql.createConnection({
      ...server,
      user: server.user || 'root',
      port: Number(u.port || 3306),
      // 64-bit ids stay exact; DATETIME columns hold UTC (the engine's connections write UTC).
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
    });
    return {
      all: async (statement, params) => (await conn.query(statement, [...params]))[0] as Row[],
      close: () => conn.end(),
    };
  }
  if (u.protocol === 'postgres:' || u.protocol === 'postgresql:') {
    // BIGINT comes back as a decimal string, TIMESTAMPTZ as a Date.
    const client = new pg.Client({ ...server, user: server.user || 'postgres', port: Number(u.port || 5432) });
    await client.connect();
    return {
      all: async (statement, params) => {
        let n = 0;
        return (await client.query(statement.replace(/\?/g, () => `$${++n}`), [...params])).rows as Row[];
      },
      close: () => client.end(),
    };
  }
  throw new Error(`databaseUrl must start with mysql://, mariadb://, postgres:// or postgresql://; got ${u.protocol}//`);
}

const list = (n: number) => Array.from({ length: n }, () => '?').join(', ');
const text = (v: unknown) => String(v);
const textOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

async function readDatabase(sqlReader: SqlReader, ids: readonly string[]): Promise<Omit<Stores, 'redis'>> {
  const vouchers = await sqlReader.all(
    `select id, kind, initial_stock, stock, per_user_limit, segment_shards from vouchers where id in (${list(ids.length)})`,
    ids,
  );
  const orders = await sqlReader.all(
    `select id, voucher_id, user_id, quantity, status, failure_reason, idempotency_key, updated_at from orders where voucher_id in (${list(ids.length)})`,
    ids,
  );
  const held = await sqlReader.all(`select voucher_id, user_id, quantity from user_quantities where voucher_id in (${list(ids.length)})`, ids);
  return {
    vouchers: vouchers.map((r) => ({
      id: text(r.id),
      kind: text(r.kind),
      initialStock: Number(r.initial_stock),
      stock: Number(r.stock),
      perUserLimit: Number(r.per_user_limit),
      segmentShards: textOrNull(r.segment_shards),
    })),
    orders: orders.map((r) => ({
      id: text(r.id),
      voucherId: text(r.voucher_id),
      userId: text(r.user_id),
      quantity: Number(r.quantity),
      status: text(r.status),
      failureReason: textOrNull(r.failure_reason),
      idempotencyKey: textOrNull(r.idempotency_key),
      updatedAt: (r.updated_at as Date).getTime(),
    })),
    userQuantities: held.map((r) => ({ voucherId: text(r.voucher_id), userId: text(r.user_id), quantity: Number(r.quantity) })),
  };
}

const globEscaped = (s: string) => s.replace(/[*?[\]\\]/g, '\\$&');
const regexEscaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A voucher's keys are `<prefix>:{s<shard>}:v:<id>` (hash with `stock`) and `…:buyers` (hash
 * userId → units), one pair per segment; the in-flight records are `<prefix>:{s<shard>}:inflight`
 * (hash orderId → "voucherId|userId|…"). Found by pattern, so the checker needs no shard placement.
 */
async function readRedis(redisUrl: string, prefix: string, vouchers: readonly StoredVoucher[], ids: readonly string[]): Promise<RedisVoucher[]> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    const wanted = new Set(ids);
    const voucherKey = new RegExp(`^${regexEscaped(prefix)}:\\{s(\\d+)\\}:v:(\\d+)(:buyers)?$`);
    const result = new Map<string, RedisVoucher & { shards: Set<string> }>();
    for (const id of ids) result.set(id, { voucherId: id, stock: 0, buyers: {}, inflight: 0, shards: new Set() });
    for (const key of await keysMatching(redis, `${globEscaped(prefix)}:{s*}:v:*`)) {
      const m = voucherKey.exec(key);
      const entry = m && wanted.has(m[2]!) ? result.get(m[2]!)! : null;
      if (!m || !entry) continue;
      if (m[3]) {
        for (const [user, units] of Object.entries(await redis.hgetall(key))) entry.buyers[user] = (entry.buyers[user] ?? 0) + Number(units);
        continue;
      }
      const stock = await redis.hget(key, 'stock');
      if (stock === null) continue;
      entry.shards.add(m[1]!);
      entry.stock = (entry.stock ?? 0) + Number(stock);
    }
    for (const key of await keysMatching(redis, `${globEscaped(prefix)}:{s*}:inflight`)) {
      for (const record of Object.values(await redis.hgetall(key))) {
        const entry = result.get(record.split('|')[0]!);
        if (entry) entry.inflight += 1;
      }
    }
    const segmentsOf = new Map(vouchers.map((v) => [v.id, v.segmentShards?.split(',') ?? null]));
    return [...result.values()].map(({ shards, ...entry }) => {
      // A segmented voucher names its shards; one segment lives on a shard the checker does not compute, so any one will do.
      const expected = segmentsOf.get(entry.voucherId);
      const complete = expected ? expected.every((s) => shards.has(s)) : shards.size > 0;
      return { ...entry, stock: complete ? entry.stock : null };
    });
  } finally {
    redis.disconnect();
  }
}

/** Reads both stores for `voucherIds` (the vouchers of a campaign cell). */
export async function readStores(target: StoresTarget): Promise<Stores> {
  const ids = [...new Set(target.voucherIds)];
  if (ids.length === 0) return { vouchers: [], orders: [], userQuantities: [], redis: target.redisUrl ? [] : null };
  const sqlReader = await connectSql(target.databaseUrl);
  let db: Omit<Stores, 'redis'>;
  try {
    db = await readDatabase(sqlReader, ids);
  } finally {
    await sqlReader.close();
  }
  const redis = target.redisUrl ? await readRedis(target.redisUrl, target.prefix ?? 'sk', db.vouchers, ids) : null;
  return { ...db, redis };
}
