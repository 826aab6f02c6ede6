// Moving units between two segments of one voucher, in steps that each touch one slot (a cluster
// has no transaction across masters): lend-2.lua on the lender, receive-2.lua on the receiver, then
// forget-2.lua on the lender. Every step can be repeated, so whoever finds a move unfinished
// finishes it: the receiver keeps its record of each move it received (until the voucher's keys
// expire), so a late or repeated receive never adds the units twice.
import type { RedisClient } from '../client.js';
import type { KeySpace } from '../keys.js';
import { type ScriptCalls, scriptCall } from './loader.js';

/** receive-2.lua's answer, named as there. */
const Received = { ADDED: 1, ADDED_BEFORE: 0, MISSING: -1 } as const;
/** lend-2.lua's answer when the lender has no state (its MISSING). */
const LENDER_MISSING = -1;

export interface MoveScripts {
  /** Units lent from `fromShard` for `toShard` (0: none there, or its state is missing). */
  lend(voucherId: bigint, fromShard: number, moveId: string, toShard: number, need: number): Promise<number>;
  /** Adds a lent move's units to `toShard` once; false when its state is missing (the move stays lent). */
  receive(voucherId: bigint, toShard: number, moveId: string, units: number): Promise<boolean>;
  /** Drops the lender's record of a move the receiver has. */
  forget(voucherId: bigint, fromShard: number, moveId: string): Promise<void>;
}

export function moveScripts(calls: ScriptCalls, keys: KeySpace): MoveScripts {
  const lend = scriptCall(calls, 'lend');
  const receive = scriptCall(calls, 'receive');
  const forget = scriptCall(calls, 'forget');
  return {
    async lend(voucherId, fromShard, moveId, toShard, need) {
      const units = Number(await lend(keys.voucher(voucherId, fromShard), keys.movesOut(voucherId, fromShard), moveId, toShard, need));
      return units === LENDER_MISSING ? 0 : units;
    },
    async receive(voucherId, toShard, moveId, units) {
      return Number(await receive(keys.voucher(voucherId, toShard), keys.movesIn(voucherId, toShard), moveId, units)) !== Received.MISSING;
    },
    async forget(voucherId, fromShard, moveId) {
      await forget(keys.voucher(voucherId, fromShard), keys.movesOut(voucherId, fromShard), moveId);
    },
  };
}

/**
 * True when no step of a move touched any of the voucher's `shards` since their moves counters
 * read `seen` (in the same order): reads of the segments taken in between add up across them.
 */
export async function unmovedSince(redis: RedisClient, keys: KeySpace, voucherId: bigint, shards: number[], seen: number[]): Promise<boolean> {
  const now = await Promise.all(shards.map((s) => redis.hget(keys.voucher(voucherId, s), 'moves')));
  return now.every((m, i) => Number(m ?? 0) === seen[i]);
}
