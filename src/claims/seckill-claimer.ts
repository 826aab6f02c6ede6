// Use case: a buyer claims units of a seckill voucher. One Lua script takes the rate-limit tokens,
// decides atomically and, when it admits, appends the order to the shard's stream (claims arriving
// together share one call: admission-batch.ts); the database sees the order later, in a batch (the
// order pipeline). Database load is bounded by winners, not by requests; once nothing is left,
// Redis load is not bounded by requests either (sold-out answers come from memory, see
// sold-out-cache.ts).
//
// A voucher of several segments (vouchers/segments.ts) is claimed in the buyer's home segment. When
// that one is short, it borrows units from the others before the buyer hears SOLD_OUT (or joins
// the waitlist), so the last unit sells whichever segment holds it.
import { setTimeout as sleep } from 'node:timers/promises';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { AdmitCode, type AdmitResult } from '../infra/redis/scripts/admission.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import type { SegmentMoves } from '../vouchers/segment-moves.js';
import { homeShard } from '../vouchers/segments.js';
import type { AdmitOne, AdmitOneOptions } from './admission-batch.js';
import type { Claim, Claimer } from './claim.js';
import { ADMIT_OUTCOME, admitErrorOf, soldOutError } from './errors.js';
import type { SoldOutCache } from './sold-out-cache.js';

/**
 * Borrow rounds before a short segment's buyer hears SOLD_OUT although units are left somewhere
 * (other buyers took what this one borrowed, or the units were on their way between segments).
 */
const BORROW_ROUNDS = 10;

export interface ClaimSeckillDeps {
  ids: IdGenerator;
  /** The admit script, with the rate limits, batched per voucher segment (admission-batch.ts). */
  admit: AdmitOne;
  redisState: VoucherRedisState;
  soldOut: SoldOutCache;
  keys: KeySpace;
  moves: SegmentMoves;
  onOutcome?: (outcome: string) => void;
}

export function claimSeckillUseCase({ ids, admit, redisState, soldOut, keys, moves, onOutcome }: ClaimSeckillDeps): Claimer {
  async function admitWarm(claim: Claim, input: Parameters<AdmitOne>[1], options: AdmitOneOptions): Promise<AdmitResult> {
    const result = await admit(claim.voucher.id, input, options);
    if (result.code !== AdmitCode.MISSING) return result;
    await redisState.rewarm(claim.voucher);
    return admit(claim.voucher.id, input, options);
  }

  return async function claimSeckill(claim) {
    const cached = soldOut.answer(claim.voucher, claim.userId, claim.idempotencyKey !== undefined);
    if (cached) {
      onOutcome?.('sold_out_cached');
      throw soldOutError(cached.waitlisted);
    }
    const input = { userId: claim.userId, orderId: ids.next(), quantity: claim.quantity, idempotencyKey: claim.idempotencyKey };
    const askedAt = soldOut.stamp();
    let result: AdmitResult;
    // A segment's `closed` speaks for the voucher only once no other segment has a unit either.
    let everywhereShort = !claim.voucher.segmentShards;
    if (!claim.voucher.segmentShards) {
      result = await admitWarm(claim, input, {});
    } else {
      const shard = homeShard(claim.voucher, claim.userId, keys);
      const segments = claim.voucher.segmentShards.length;
      // Flagged: every segment was seen empty lately, so there is nothing to borrow.
      result = await admitWarm(claim, input, { shard, segments, enrol: soldOut.flagged(claim.voucher.id) });
      for (let round = 1; result.code === AdmitCode.SEGMENT_SHORT; round++) {
        const borrowed = await moves.borrow(claim.voucher, shard, claim.quantity);
        // Nothing to borrow: sold out only if too few units are left anywhere, even on their way.
        everywhereShort = borrowed === 0 && (await moves.unitsLeft(claim.voucher)) < claim.quantity;
        if (borrowed === 0 && !everywhereShort) await sleep(1);
        result = await admitWarm(claim, input, { shard, segments, enrol: everywhereShort || round >= BORROW_ROUNDS, tokens: false });
      }
    }
    if (result.closedAtVersion !== undefined && everywhereShort) soldOut.remember(claim.voucher, askedAt, result.closedAtVersion);
    onOutcome?.(ADMIT_OUTCOME[result.code]);
    const rejected = admitErrorOf(result, claim.voucher);
    if (rejected) throw rejected;
    return { orderId: result.orderId, status: 'processing', fresh: result.code === AdmitCode.ADMITTED };
  };
}
