// Units moving between the segments of one voucher (segments.ts), so that splitting the stock
// never undersells: a buyer's home segment that runs short borrows from the others, and units given
// back where nobody waits go to a segment where somebody does. Each move is three steps, each on
// one slot (infra/redis/scripts/moves.ts): lend (the lender's stock goes down, the move is recorded
// there), receive (the receiver's stock goes up, once per move: the receiver keeps the record),
// then the lender's record is dropped. A mover that dies half-way leaves the lender's record, and
// `finishStale` (reconciliation) does the rest: no unit is lost, none is counted twice.
import type { IdGenerator } from '../ids/worker-lease.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { RedisClient } from '../infra/redis/client.js';
import type { Scripts } from '../infra/redis/scripts/index.js';
import { unmovedSince } from '../infra/redis/scripts/moves.js';
import type { Promotion } from '../infra/redis/scripts/voucher-state.js';
import { segmentShards } from './segments.js';
import type { Voucher } from './voucher.js';

export interface SegmentMoves {
  /**
   * Moves units into `toShard` from the voucher's other segments until it got `need`, or every
   * other segment is empty; returns the units it got.
   */
  borrow(v: Voucher, toShard: number, need: number): Promise<number>;
  /**
   * Units in every segment's stock and on their way between two (a borrow found none), never fewer
   * than there are; Infinity when units kept moving while they were counted.
   */
  unitsLeft(v: Voucher): Promise<number>;
  /**
   * Units `fromShard` has while its own waitlist is empty go to the segments with waiting users,
   * who are promoted there (a waitlist is per segment: a buyer waits in their home segment).
   */
  handOff(v: Voucher, fromShard: number): Promise<Promotion[]>;
  /** Finishes the moves lent longer than `olderThanMs` ago (their mover died); returns how many. */
  finishStale(v: Voucher, olderThanMs: number): Promise<number>;
}

export interface SegmentMovesDeps {
  redis: RedisClient;
  keys: KeySpace;
  scripts: Pick<Scripts, 'lend' | 'receive' | 'forget' | 'restock' | 'inspect'>;
  /** Move ids and promotion order ids; leased on first use. */
  ids: () => Promise<IdGenerator>;
}

const RECEIVER_MISSING = -1;
/** Reads of every segment before a count that units kept moving through is given up (unknown). */
const COUNT_TRIES = 3;

export function createSegmentMoves({ redis, keys, scripts, ids }: SegmentMovesDeps): SegmentMoves {
  let turn = 0;

  /** The segments other than `shard`, from a different one each call: borrowers spread over lenders. */
  const others = (v: Voucher, shard: number) => {
    const rest = segmentShards(v, keys).filter((s) => s !== shard);
    const start = turn++ % Math.max(1, rest.length);
    return [...rest.slice(start), ...rest.slice(0, start)];
  };

  /** The units moved; RECEIVER_MISSING when the receiver's state is gone (the move stays lent). */
  async function move(v: Voucher, fromShard: number, toShard: number, need: number): Promise<number> {
    const moveId = (await ids()).next().toString();
    const units = await scripts.lend(v.id, fromShard, moveId, toShard, need);
    if (units === 0) return 0;
    if (!(await scripts.receive(v.id, toShard, moveId, units))) return RECEIVER_MISSING; // finishStale gives it once rebuilt
    await scripts.forget(v.id, fromShard, moveId);
    return units;
  }

  return {
    async borrow(v, toShard, need) {
      let got = 0;
      for (const from of others(v, toShard)) {
        if (got >= need) break;
        const units = await move(v, from, toShard, need - got);
        if (units === RECEIVER_MISSING) break; // lending more would only strand more units
        got += units;
      }
      return got;
    },

    async unitsLeft(v) {
      const shards = segmentShards(v, keys);
      for (let attempt = 0; attempt < COUNT_TRIES; attempt++) {
        // Each segment read at once (stock, lent records, moves counter), then every counter again:
        // when no segment's moved in between, no unit was on its way from a segment not read yet to
        // one read already, so none is missed. (One received but whose lender still holds the record
        // counts twice: too many units only means one more round of borrowing.)
        const heads = await Promise.all(shards.map((s) => scripts.inspect(v.id, s)));
        if (!(await unmovedSince(redis, keys, v.id, shards, heads.map((h) => h?.moves ?? 0)))) continue;
        return heads.reduce((n, h) => n + Math.max(0, h?.stock ?? 0) + (h?.lent ?? []).reduce((m, l) => m + l.units, 0), 0);
      }
      return Infinity; // units kept moving while counted: not known to be too few
    },

    async handOff(v, fromShard) {
      if (!v.waitlist || segmentShards(v, keys).length === 1) return [];
      if ((await redis.zcard(keys.waitlist(v.id, fromShard))) > 0) return [];
      const promotions: Promotion[] = [];
      for (const to of others(v, fromShard)) {
        const waiting = await redis.zcard(keys.waitlist(v.id, to));
        if (waiting === 0) continue;
        const units = await move(v, fromShard, to, 1);
        if (units === 0) break; // nothing left to give
        // Each promotion takes at least one unit: no more ids than units or waiting buyers.
        const generator = await ids();
        const promotionIds = Array.from({ length: Math.min(waiting, units) }, () => generator.next());
        const result = await scripts.restock({ voucherId: v.id, shard: to, orderId: '', userId: '', quantity: 0, promotionIds });
        if (result.kind === 'restocked') promotions.push(...result.promotions);
      }
      return promotions;
    },

    async finishStale(v, olderThanMs) {
      let finished = 0;
      for (const from of segmentShards(v, keys)) {
        const state = await scripts.inspect(v.id, from);
        for (const lent of state?.lent ?? []) {
          if (Date.now() - lent.at.getTime() < olderThanMs) continue;
          if (!(await scripts.receive(v.id, lent.toShard, lent.moveId, lent.units))) continue;
          await scripts.forget(v.id, from, lent.moveId);
          finished += 1;
        }
      }
      return finished;
    },
  };
}
