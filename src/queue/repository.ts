// A queue voucher's draw in the database: the seed (secret until published), the outcome, and the
// drawn entrants by place, which `seckill draw verify` and anyone else read back; before the draw,
// the copy of its pre-queue (prequeue-copy.ts).
import { sql } from 'kysely';
import type { Db } from '../infra/db/database.js';
import { dialectOf } from '../infra/db/dialect.js';

/** Rows per INSERT of the entrant list: 3 parameters each, far below either database's limit. */
const ENTRANTS_PER_INSERT = 1000;

/** A pre-queue entrant: the user id and when they joined (µs of Redis time, decimal). */
export type Joined = readonly [userId: string, joinedUs: string];

export interface DrawRow {
  seed: string;
  drawnAt: Date | null;
  closedAt: Date | null;
}

/** A queue that is not closed yet, for the runner. */
export interface OpenQueue {
  voucherId: bigint;
  opensAt: Date;
  beginAt: Date;
  endAt: Date;
  drawn: boolean;
}

export interface QueueRepository {
  draw(voucherId: bigint): Promise<DrawRow | null>;
  /** Queues not closed whose pre-queue opens before `until` (drawn or not). */
  openQueues(until: Date): Promise<OpenQueue[]>;
  /** Adds entrants to the copy of the voucher's pre-queue (an INSERT per 1,000); an entrant copied before keeps its row. */
  copyPrequeue(voucherId: bigint, entrants: readonly Joined[]): Promise<void>;
  /** The copy of the pre-queue by user id, after user `after` (null: from the first), at most `limit`. */
  copiedEntrants(voucherId: bigint, after: string | null, limit: number): Promise<Joined[]>;
  /** Replaces the voucher's entrant list with `byPlace` (user ids, place 1 first), and drops the pre-queue's copy, in one transaction. */
  saveEntrants(voucherId: bigint, byPlace: readonly string[]): Promise<void>;
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
  return { ...drawRows(db), ...entrantLists(db) };
}

/** The draw's row: its seed and outcome, and when its queue closed. */
function drawRows(db: Db): Pick<QueueRepository, 'draw' | 'openQueues' | 'publish' | 'close' | 'paidUnits'> {
  return {
    async draw(voucherId) {
      const row = await db.selectFrom('queue_draws').select(['seed', 'drawn_at', 'closed_at']).where('voucher_id', '=', voucherId.toString()).executeTakeFirst();
      return row ? { seed: row.seed, drawnAt: row.drawn_at, closedAt: row.closed_at } : null;
    },
    async openQueues(until) {
      const rows = await db
        .selectFrom('queue_draws as d')
        .innerJoin('vouchers as v', 'v.id', 'd.voucher_id')
        .select(['d.voucher_id', 'v.queue_opens_at', 'v.begin_at', 'v.end_at', 'd.drawn_at'])
        .where('d.closed_at', 'is', null)
        .where('v.queue_opens_at', '<=', until)
        .execute();
      return rows.map((r) => ({ voucherId: BigInt(r.voucher_id), opensAt: r.queue_opens_at!, beginAt: r.begin_at, endAt: r.end_at, drawn: r.drawn_at !== null }));
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

/** The pre-queue's copy before the draw, and the drawn entrant list after it. */
function entrantLists(db: Db): Pick<QueueRepository, 'copyPrequeue' | 'copiedEntrants' | 'saveEntrants' | 'entrants'> {
  return {
    async copyPrequeue(voucherId, entrants) {
      const id = voucherId.toString();
      // A row copied before is kept as it is.
      const keep = sql.raw(dialectOf(db).keepOnConflict(['voucher_id', 'user_id']));
      for (let i = 0; i < entrants.length; i += ENTRANTS_PER_INSERT) {
        const rows = entrants.slice(i, i + ENTRANTS_PER_INSERT).map(([userId, joinedUs]) => ({ voucher_id: id, user_id: userId, joined_us: joinedUs }));
        await db.insertInto('queue_prequeue').values(rows).modifyEnd(keep).execute();
      }
    },
    async copiedEntrants(voucherId, after, limit) {
      const rows = await db
        .selectFrom('queue_prequeue')
        .select(['user_id', 'joined_us'])
        .where('voucher_id', '=', voucherId.toString())
        .$if(after !== null, (q) => q.where('user_id', '>', after!))
        .orderBy('user_id')
        .limit(limit)
        .execute();
      return rows.map((r) => [r.user_id, r.joined_us] as const);
    },
    async saveEntrants(voucherId, byPlace) {
      const id = voucherId.toString();
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('queue_entrants').where('voucher_id', '=', id).execute();
        await trx.deleteFrom('queue_prequeue').where('voucher_id', '=', id).execute();
        for (let i = 0; i < byPlace.length; i += ENTRANTS_PER_INSERT) {
          const rows = byPlace.slice(i, i + ENTRANTS_PER_INSERT).map((userId, j) => ({ voucher_id: id, position: i + j + 1, user_id: userId }));
          await trx.insertInto('queue_entrants').values(rows).execute();
        }
      });
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
  };
}
