// A buyer whose claim was answered 503 while its admission stood (a master that did not confirm it
// in time, then failed over) retries with the same Idempotency-Key and must get that order back,
// not LIMIT_EXCEEDED. The new master may lack the key's record (what the old one took last never
// reached it), but the database has it: the pipeline stores each order with its key. This writes
// the database's keys back into the voucher's records, without replacing any (HSETNX: a record
// Redis has is the newer or the same), walking the keys in pages along their unique index.
import type { Db } from '../infra/db/database.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { inSteps } from '../infra/redis/walk.js';
import { RETAIN_AFTER_END_MS } from '../vouchers/redis-state.js';
import { homeShard } from '../vouchers/segments.js';
import type { Voucher } from '../vouchers/voucher.js';

/** Keys per database page. */
const PAGE = 5_000;

export interface IdempotencyRecordsDeps {
  db: Db;
  redis: RedisClient;
  keys: KeySpace;
}

/** Writes every stored order's key the voucher's records lack; returns how many it wrote. */
export async function restoreIdempotencyRecords({ db, redis, keys }: IdempotencyRecordsDeps, voucher: Voucher): Promise<number> {
  const expireAt = Math.ceil((voucher.endAt.getTime() + RETAIN_AFTER_END_MS) / 1000);
  let written = 0;
  let after = { user: '0', key: '' };
  for (;;) {
    const rows = await db
      .selectFrom('orders')
      .select(['id', 'user_id', 'quantity', 'idempotency_key'])
      .where('voucher_id', '=', voucher.id.toString())
      .where('idempotency_key', 'is not', null)
      .where((eb) => eb.or([eb('user_id', '>', after.user), eb.and([eb('user_id', '=', after.user), eb('idempotency_key', '>', after.key)])]))
      .orderBy('user_id')
      .orderBy('idempotency_key')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return written;
    // A pipeline per segment: its keys share one slot (a Cluster pipelines one slot at a time).
    const bySegment = new Map<number, typeof rows>();
    for (const r of rows) {
      const shard = homeShard(voucher, r.user_id, keys);
      const list = bySegment.get(shard);
      if (list) list.push(r);
      else bySegment.set(shard, [r]);
    }
    for (const [shard, ofSegment] of bySegment) {
      const record = keys.idempotency(voucher.id, shard);
      for (const step of inSteps(ofSegment)) {
        const batch = redis.pipeline();
        for (const r of step) batch.hsetnx(record, `${r.user_id}:${r.idempotency_key}`, `${r.id}:${r.quantity}`);
        const results = (await batch.expireat(record, expireAt).exec()) ?? [];
        written += results.filter(([err, value], i) => i < step.length && !err && value === 1).length;
      }
    }
    const last = rows[rows.length - 1]!;
    after = { user: last.user_id, key: last.idempotency_key! };
  }
}
