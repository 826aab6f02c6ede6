// Use case: a buyer claims units of a seckill voucher. One Lua script takes the rate-limit tokens,
// decides atomically and, when it admits, appends the order to the shard's stream (claims arriving
// together share one call: admission-batch.ts); the database sees the order later, in a batch (the
// order pipeline). Database load is bounded by winners, not by requests; once nothing is left,
// Redis load is not bounded by requests either (sold-out answers come from memory, see
// sold-out-cache.ts).
//
// A voucher of several segments (vouchers/segments.ts) is claimed in the buyer's home segment. When
// that one is short, it borrows units from the others before the buyer hears SOLD_OUT (or joins
// the waitlist), so the last unit sells whichever segment holds it; SOLD_OUT only once no segment
// has a unit, nor any unit is on its way between two.
//
// State the script cannot decide on is made ready first: missing state is rebuilt from the
// database, and state not verified on the current master (a failover or a restart since) is
// verified against it (consistency/verification.ts); the claim waits for that a little, then
// hears 503 UNAVAILABLE, never a 202 on state the database has not confirmed.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { VoucherVerifier } from '../vouchers/verifier.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { KeySpace } from '../infra/redis/keys.js';
import { AdmitCode, type AdmitResult } from '../infra/redis/scripts/admission.js';
import type { VoucherRedisState } from '../vouchers/redis-state.js';
import type { SegmentMoves } from '../vouchers/segment-moves.js';
import { homeShard } from '../vouchers/segments.js';
import type { AdmitOne, AdmitOneOptions } from './admission-batch.js';
import type { Claim, Claimed, Claimer } from './claim.js';
import { ADMIT_OUTCOME, admitErrorOf, soldOutError, unitsOutOfReachError } from './errors.js';
import type { SoldOutCache } from './sold-out-cache.js';
import { activeTraceParent, inSpan } from '../tracing/spans.js';

/**
 * Longest a claim keeps borrowing while units are left somewhere but out of its reach (other
 * buyers took what it borrowed, or the units are on their way between segments). Then it hears
 * 503 UNAVAILABLE, retry: SOLD_OUT is said only when no unit is left anywhere.
 */
const BORROW_WAIT_MS = 1_000;
/** Pauses between borrow rounds: doubling, with jitter so that claims racing for a unit fall apart. */
const borrowPause = (round: number) => Math.random() * Math.min(32, 2 ** round);
/** Longest wait of a claim for its voucher's verification (below a buyer's patience for one answer). */
const VERIFY_WAIT_MS = 2_000;

export interface ClaimSeckillDeps {
  ids: IdGenerator;
  /** The admit script, with the rate limits, batched per voucher segment (admission-batch.ts). */
  admit: AdmitOne;
  redisState: VoucherRedisState;
  soldOut: SoldOutCache;
  keys: KeySpace;
  moves: SegmentMoves;
  verifier: Pick<VoucherVerifier, 'verify'>;
  onOutcome?: (outcome: string) => void;
}

export function claimSeckillUseCase({ ids, admit, redisState, soldOut, keys, moves, verifier, onOutcome }: ClaimSeckillDeps): Claimer {
  async function admitReady(claim: Claim, input: Parameters<AdmitOne>[1], options: AdmitOneOptions): Promise<AdmitResult> {
    let result = await admit(claim.voucher.id, input, options);
    if (result.code === AdmitCode.MISSING) {
      await redisState.rewarm(claim.voucher);
      result = await admit(claim.voucher.id, input, options);
    }
    if (result.code !== AdmitCode.UNVERIFIED) return result;
    // Not verified in time: the UNVERIFIED answer stands (503, retry).
    // The deadline keeps the process alive while it runs (it is the claim's answer) and is cancelled
    // as soon as the verification settles.
    const deadline = new AbortController();
    const verified = await Promise.race([
      verifier.verify(claim.voucher),
      sleep(VERIFY_WAIT_MS, false, { signal: deadline.signal }).catch(() => false),
    ]).finally(() => deadline.abort());
    return verified ? admit(claim.voucher.id, input, options) : result;
  }

  async function admitClaim(claim: Claim): Promise<Claimed> {
    // A traced claim's entry carries this span: the batch that stores the order joins its trace.
    const input = { userId: claim.userId, orderId: ids.next(), quantity: claim.quantity, idempotencyKey: claim.idempotencyKey, traceParent: activeTraceParent() };
    const askedAt = soldOut.stamp();
    let result: AdmitResult;
    // A segment's `closed` speaks for the voucher only once no other segment has a unit either.
    let everywhereShort = !claim.voucher.segmentShards;
    if (!claim.voucher.segmentShards) {
      result = await admitReady(claim, input, {});
    } else {
      const shard = homeShard(claim.voucher, claim.userId, keys);
      const segments = claim.voucher.segmentShards.length;
      // Flagged: every segment was seen empty lately, so there is nothing to borrow.
      result = await admitReady(claim, input, { shard, segments, enrol: soldOut.flagged(claim.voucher.id) });
      const giveUpAt = performance.now() + BORROW_WAIT_MS;
      for (let round = 1; result.code === AdmitCode.SEGMENT_SHORT; round++) {
        if (performance.now() > giveUpAt) throw unitsOutOfReachError();
        const borrowed = await moves.borrow(claim.voucher, shard, claim.quantity);
        // Nothing to borrow: sold out only if too few units are left anywhere, even on their way.
        everywhereShort = borrowed === 0 && (await moves.unitsLeft(claim.voucher)) < claim.quantity;
        if (borrowed === 0 && !everywhereShort) await sleep(borrowPause(round));
        result = await admitReady(claim, input, { shard, segments, enrol: everywhereShort, tokens: false });
      }
    }
    if (result.closedAtVersion !== undefined && everywhereShort) soldOut.remember(claim.voucher, askedAt, result.closedAtVersion);
    onOutcome?.(ADMIT_OUTCOME[result.code]);
    const rejected = admitErrorOf(result, claim.voucher);
    if (rejected) throw rejected;
    return { orderId: result.orderId, status: 'processing', fresh: result.code === AdmitCode.ADMITTED };
  }

  return async function claimSeckill(claim) {
    const cached = soldOut.answer(claim.voucher, claim.userId, claim.idempotencyKey !== undefined);
    if (cached) {
      onOutcome?.('sold_out_cached');
      throw soldOutError(cached.waitlisted);
    }
    return inSpan('seckill admit', { 'seckill.voucher.id': claim.voucher.id.toString(), 'seckill.quantity': claim.quantity }, () => admitClaim(claim));
  };
}
