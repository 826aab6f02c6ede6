// A queue voucher's draw in the database: the seed (secret until published), the outcome, and the
// drawn entrants by place, which `seckill draw verify` and anyone else read back.
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';

/** Rows per INSERT of the entrant list: 3 parameters each, far below either database's limit. */
const ENTRANTS_PER_INSERT = 1000;

export interface DrawRow {
  seed: string;
  drawnAt: Date | null;
  closedAt: Date | null;
}

/** A queue that is not closed yet, for the runner. */
export interface OpenQueue {
  voucherId: bigint;
  beginAt: Date;
  endAt: Date;
  drawn: boolean;
}

export interface QueueRepository {
  draw(voucherId: bigint): Promise<DrawRow | null>;
  /** Queues not closed whose sale begins before `until` (drawn or not). */
  openQueues(until: Date): Promise<OpenQueue[]>;
  /** Replaces the voucher's entrant list with `order` (place 1 first), in one transaction. */
  saveEntrants(voucherId: bigint, order: readonly string[]): Promise<void>;
  /** Publishes the draw: from now on its seed is public. */
  publish(voucherId: bigint, outcome: { drawnAt: Date; entrants: number; admitted: number }): Promise<void>;
  /** Marks the queue closed (once); false when it was closed before. */
  close(voucherId: bigint): Promise<boolean>;
  /** Published entrants after place `after`, at most `limit`, by place. */
  entrants(voucherId: bigint, after: number, limit: number): Promise<{ position: number; userId: string }[]>;
  /** Units of the voucher's paid orders. */
  paidUnits(voucherId: bigint): Promise<number>;
}

export function createQueueRepository(db: Db): QueueRepository {
  return {
    async draw(voucherId) {
      const row = await db.selectFrom('queue_draws').select(['seed', 'drawn_at', 'closed_at']).where('voucher_id', '=', voucherId.toString()).executeTakeFirst();
      return row ? { seed: row.seed, drawnAt: row.drawn_at, closedAt: row.closed_at } : null;
    },
    async openQueues(until) {
      const rows = await db
        .selectFrom('queue_draws as d')
        .innerJoin('vouchers as v', 'v.id', 'd.voucher_id')
        .select(['d.voucher_id', 'v.begin_at', 'v.end_at', 'd.drawn_at'])
        .where('d.closed_at', 'is', null)
        .where('v.begin_at', '<=', until)
        .execute();
      return rows.map((r) => ({ voucherId: BigInt(r.voucher_id), beginAt: r.begin_at, endAt: r.end_at, drawn: r.drawn_at !== null }));
    },
    async saveEntrants(voucherId, order) {
      const id = voucherId.toString();
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('queue_entrants').where('voucher_id', '=', id).execute();
        for (let i = 0; i < order.length; i += ENTRANTS_PER_INSERT) {
          const rows = order.slice(i, i + ENTRANTS_PER_INSERT).map((userId, j) => ({ voucher_id: id, position: i + j + 1, user_id: userId }));
          await trx.insertInto('queue_entrants').values(rows).execute();
        }
      });
    },
    async publish(voucherId, { drawnAt, entrants, admitted }) {
      await db.updateTable('queue_draws').set({ drawn_at: drawnAt, entrants, admitted }).where('voucher_id', '=', voucherId.toString()).execute();
    },
    async close(voucherId) {
      const result = await db
        .updateTable('queue_draws')
        .set({ closed_at: dialectOf(db).now })
        .where('voucher_id', '=', voucherId.toString())
        .where('closed_at', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },
    async entrants(voucherId, after, limit) {
      const rows = await db
        .selectFrom('queue_entrants as e')
        .innerJoin('queue_draws as d', 'd.voucher_id', 'e.voucher_id')
        .select(['e.position', 'e.user_id'])
        .where('e.voucher_id', '=', voucherId.toString())
        .where('d.drawn_at', 'is not', null)
        .where('e.position', '>', after)
        .orderBy('e.position')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ position: r.position, userId: r.user_id }));
    },
    async paidUnits(voucherId) {
      const row = await db
        .selectFrom('orders')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('quantity'), eb.lit(0)).as('units'))
        .where('voucher_id', '=', voucherId.toString())
        .where('status', '=', 'paid')
        .executeTakeFirstOrThrow();
      return Number(row.units);
    },
  };
}
