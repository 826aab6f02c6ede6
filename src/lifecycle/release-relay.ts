// Relays released units from the database's outbox to Redis. A release commits in SQL first (with
// its outbox row); this relay then gives the units back to Redis and deletes the row. The restock
// script marks each order it gave back (the marks stay until the voucher's keys expire), so a relay
// that dies after Redis but before the delete (or two relays racing) never gives the same units
// twice, and reconciliation can tell applied releases from pending ones. Rows are claimed with
// SKIP LOCKED, so any worker can finish what a dead one left. Given-back units first go to the
// voucher's waitlist (on a segmented voucher: the buyer's segment's, then the other segments').
// A promoted order's `promoted` event is not written here but by the pipeline with its `stored`
// one (its stream entry is marked): this transaction may roll back after Redis admitted it. On a
// queue voucher the waitlist is the queue's waiting places: its promotions admit the next places.
// A traced release (its outbox row keeps the releasing span's traceparent) is given back in a span
// of the released order's trace, and the orders it promotes are stored in that trace too.
import type { IdGenerator } from '../ids/worker-lease.js';
import type { Db } from '../infra/db/database.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import type { Promotion } from '../infra/redis/scripts/voucher-state.js';
import type { OrderPubSub } from '../orders/order-pubsub.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import type { Voucher } from '../vouchers/voucher.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { SegmentMoves } from '../vouchers/segment-moves.js';
import { homeShard, segmentShards } from '../vouchers/segments.js';
import { inCarriedSpan } from '../tracing/spans.js';

const ROWS_PER_TRANSACTION = 200;

export interface ReleaseRelayDeps {
  db: Db;
  scripts: Scripts;
  /** Ids for waitlist promotions; leased on first use (a run that promotes nobody takes no lease). */
  ids: () => Promise<IdGenerator>;
  directory: VoucherDirectory;
  redisState: VoucherRedisState;
  moves: SegmentMoves;
  keys: KeySpace;
  redis: RedisClient;
  pubsub: OrderPubSub;
  /** Told of a queue voucher's promotions after they were published (its buyers' queue events). */
  onQueuePromotions?(voucher: Voucher, promotions: Promotion[]): Promise<void>;
}

export interface ReleaseRelay {
  /** Relays every outbox row not held by another relay; returns how many it relayed. */
  drain(): Promise<number>;
  /**
   * Promotes waiting buyers for the units a voucher has on sale: after its verification on a new
   * master, for what was given back meanwhile (restock-8.lua promotes nobody on unverified state).
   */
  promoteWaiting(voucher: Voucher): Promise<number>;
}

interface OutboxRow {
  order_id: string;
  voucher_id: string;
  user_id: string;
  quantity: number;
  trace_parent: string | null;
}

const promotedEvent = (p: Promotion & { voucherId: string }) => ({ type: 'promoted' as const, status: 'processing', ...p });

/** Promotes waiting buyers for the units each segment of the voucher has on sale. */
async function promotionsFor({ redis, keys, scripts, ids }: ReleaseRelayDeps, voucher: Voucher): Promise<(Promotion & { voucherId: string })[]> {
  if (!voucher.waitlist && !voucher.queue) return [];
  const promotions: (Promotion & { voucherId: string })[] = [];
  for (const shard of segmentShards(voucher, keys)) {
    // Each promotion takes at least one unit: no more ids than waiting buyers or units.
    const [waiting, stock] = await Promise.all([redis.zcard(keys.waitlist(voucher.id, shard)), redis.hget(keys.voucher(voucher.id, shard), 'stock')]);
    const count = Math.min(waiting, Number(stock ?? 0));
    if (count <= 0) continue;
    const generator = await ids();
    const promotionIds = Array.from({ length: count }, () => generator.next());
    const result = await scripts.restock({ voucherId: voucher.id, shard, orderId: '', userId: '', quantity: 0, promotionIds, queue: voucher.queue !== null });
    if (result.kind === 'restocked') promotions.push(...result.promotions.map((p) => ({ ...p, voucherId: voucher.id.toString() })));
  }
  return promotions;
}

/** Tells each queue voucher of its promotions (its buyers' queue events). */
async function tellQueues(directory: VoucherDirectory, tell: NonNullable<ReleaseRelayDeps['onQueuePromotions']>, promotions: (Promotion & { voucherId: string })[]) {
  const byVoucher = new Map<string, Promotion[]>();
  for (const p of promotions) byVoucher.set(p.voucherId, [...(byVoucher.get(p.voucherId) ?? []), p]);
  for (const [id, mine] of byVoucher) {
    const voucher = await directory.getStored(BigInt(id));
    if (voucher?.queue) await tell(voucher, mine);
  }
}

export function createReleaseRelay(deps: ReleaseRelayDeps): ReleaseRelay {
  const { db, scripts, ids, directory, redisState, moves, keys, pubsub: events, onQueuePromotions } = deps;
  const giveBackTraced = (row: OutboxRow) =>
    inCarriedSpan('order give back', row.trace_parent, { 'seckill.order.id': row.order_id }, (traceParent) => giveBack(row, traceParent));

  async function giveBack(row: OutboxRow, traceParent: string | undefined): Promise<(Promotion & { voucherId: string })[]> {
    const voucher = await directory.getStored(BigInt(row.voucher_id));
    if (!voucher) return [];
    // Back to the segment the buyer claimed in, whose count holds these units.
    const shard = homeShard(voucher, row.user_id, keys);
    const input = {
      voucherId: voucher.id,
      shard,
      orderId: row.order_id,
      userId: row.user_id,
      quantity: row.quantity,
      promotionIds: [] as bigint[],
      queue: voucher.queue !== null,
      traceParent,
    };
    if (voucher.waitlist || voucher.queue) {
      // Each promotion takes at least one unit, so `quantity` fresh ids are always enough.
      const generator = await ids();
      input.promotionIds = Array.from({ length: row.quantity }, () => generator.next());
    }
    let result = await scripts.restock(input);
    if (result.kind === 'missing') {
      // Warming reads the database, which already has these units, and marks this row as given back.
      await redisState.rewarm(voucher);
      result = await scripts.restock(input);
    }
    if (result.kind === 'missing') throw new Error(`voucher ${row.voucher_id} has no Redis state after warming`);
    // Also after "given back before": a hand-off that failed last time (and rolled the row back) is done now.
    const promotions = [...(result.kind === 'restocked' ? result.promotions : []), ...(await moves.handOff(voucher, shard))];
    return promotions.map((p) => ({ ...p, voucherId: row.voucher_id }));
  }

  async function relayBatch(): Promise<number> {
    let rows: OutboxRow[] = [];
    const promotions: (Promotion & { voucherId: string })[] = [];
    await db
      .transaction()
      .setIsolationLevel('read committed')
      .execute(async (trx) => {
        rows = await trx
          .selectFrom('release_outbox')
          .select(['order_id', 'voucher_id', 'user_id', 'quantity', 'trace_parent'])
          .orderBy('order_id')
          .limit(ROWS_PER_TRANSACTION)
          .forUpdate()
          .skipLocked()
          .execute();
        if (rows.length === 0) return;
        for (const list of await Promise.all(rows.map(giveBackTraced))) promotions.push(...list);
        await trx.deleteFrom('release_outbox').where('order_id', 'in', rows.map((r) => r.order_id)).execute();
      });
    await announce(promotions);
    return rows.length;
  }

  async function announce(promotions: (Promotion & { voucherId: string })[]): Promise<void> {
    await events.publish(promotions.map(promotedEvent));
    if (onQueuePromotions) await tellQueues(directory, onQueuePromotions, promotions);
  }

  return {
    async promoteWaiting(voucher) {
      const promotions = await promotionsFor(deps, voucher);
      await announce(promotions);
      return promotions.length;
    },
    async drain() {
      let total = 0;
      let n: number;
      do {
        n = await relayBatch();
        total += n;
      } while (n === ROWS_PER_TRANSACTION);
      return total;
    },
  };
}
