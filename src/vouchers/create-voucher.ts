// Use case: an admin creates a voucher; a Redis-gated (seckill) voucher is warmed into Redis at once so the
// first claim needs no database read.
import { AppError } from '../errors.js';
import type { IdGenerator } from '../ids/worker-lease.js';
import type { VoucherKind } from '../infra/db/types.js';
import type { VoucherDirectory } from './directory.js';
import type { VoucherRedisState } from './redis-state.js';
import type { VoucherRepository } from './repository.js';
import type { Voucher } from './voucher.js';
import { kindOf, VOUCHER_KINDS } from './kinds.js';
import { commitmentOf, newSeed } from './queue-seed.js';
import type { SegmentPlacer } from './segments.js';

export interface CreateVoucherInput {
  title: string;
  kind: VoucherKind;
  stock: number;
  beginAt: string;
  endAt: string;
  perUserLimit?: number;
  paymentTimeoutSeconds?: number;
  waitlist?: boolean;
  claimToken?: boolean;
  /** Stock segments (segments.ts), seckill only; 1 by default. */
  segments?: number;
  /** A pre-queue opening at `opensAt`, drawn at beginAt (queue/), seckill only. */
  queue?: { opensAt: string };
  /** Minor units per unit, 0 by default; `currency` DEFAULT_CURRENCY by default. */
  price?: number;
  currency?: string;
}

export interface CreateVoucherDeps {
  ids: IdGenerator;
  vouchers: VoucherRepository;
  redisState: VoucherRedisState;
  directory: VoucherDirectory;
  placeSegments: SegmentPlacer;
  /** SHARDS: a voucher has at most this many segments, each on a shard of its own. */
  shards: number;
  /** DEFAULT_CURRENCY. */
  defaultCurrency: string;
}

function parseTime(field: string, text: string): Date {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new AppError('INVALID_REQUEST', `${field} must be an ISO-8601 date-time`);
  return new Date(ms);
}

/**
 * A queue voucher's options, checked, with the draw's seed drawn now: only its hash is published
 * before the draw, so the seed was fixed before anyone joined.
 */
function queueOf(input: CreateVoucherInput, opensAt: Date, beginAt: Date, segments: number) {
  if (input.kind !== 'seckill') throw new AppError('INVALID_REQUEST', `a ${input.kind} voucher cannot have a queue: queue is for seckill vouchers`);
  if (opensAt >= beginAt) throw new AppError('INVALID_REQUEST', 'queue.opensAt must be before beginAt');
  // The queue's waiting places are the voucher's waitlist, in the order of the draw: one list.
  if (input.waitlist) throw new AppError('INVALID_REQUEST', 'a queue voucher has no separate waitlist: its waiting places are the queue');
  if (segments > 1) throw new AppError('INVALID_REQUEST', 'a queue voucher has one segment: its places are admitted in one order');
  if (input.claimToken) throw new AppError('INVALID_REQUEST', 'a queue voucher takes no claims, so no claim tokens');
  const seed = newSeed();
  return { opensAt, seed, commitment: commitmentOf(seed) };
}

export function createVoucherUseCase({ ids, vouchers, redisState, directory, placeSegments, shards, defaultCurrency }: CreateVoucherDeps) {
  return async function createVoucher(input: CreateVoucherInput): Promise<Voucher> {
    const beginAt = parseTime('beginAt', input.beginAt);
    const endAt = parseTime('endAt', input.endAt);
    if (endAt <= beginAt) throw new AppError('INVALID_REQUEST', 'endAt must be after beginAt');
    if (input.waitlist && !VOUCHER_KINDS[input.kind].waitlist) {
      throw new AppError('INVALID_REQUEST', `a ${input.kind} voucher cannot have a waitlist`);
    }
    const segments = input.segments ?? 1;
    if (segments > 1 && !VOUCHER_KINDS[input.kind].redisGated) throw new AppError('INVALID_REQUEST', `a ${input.kind} voucher has one segment: segments is for seckill vouchers`);
    if (segments > shards) throw new AppError('INVALID_REQUEST', `segments must be at most ${shards} (SHARDS: each segment needs a shard of its own)`);
    const price = input.price ?? 0;
    const perUserLimit = input.perUserLimit ?? 1;
    // An order's amount is a JSON integer, exact in every client: price × the most one order can hold.
    if (price * perUserLimit > Number.MAX_SAFE_INTEGER) throw new AppError('INVALID_REQUEST', `price × perUserLimit must be at most ${Number.MAX_SAFE_INTEGER} (an order's amount)`);
    const queue = input.queue ? queueOf(input, parseTime('queue.opensAt', input.queue.opensAt), beginAt, segments) : null;
    const id = ids.next();
    const voucher: Voucher = {
      id,
      title: input.title,
      kind: input.kind,
      initialStock: input.stock,
      stock: input.stock,
      beginAt,
      endAt,
      perUserLimit,
      paymentTimeoutSeconds: input.paymentTimeoutSeconds ?? 900,
      waitlist: input.waitlist ?? false,
      claimToken: input.claimToken ?? false,
      segmentShards: await placeSegments(id, segments),
      queue: queue && { opensAt: queue.opensAt, commitment: queue.commitment },
      price,
      currency: input.currency ?? defaultCurrency,
    };
    await vouchers.insert(voucher, queue?.seed);
    // If this fails the voucher still exists; its first claim rebuilds the state from the database.
    if (kindOf(voucher).redisGated) await redisState.create(voucher);
    directory.remember(voucher);
    return voucher;
  };
}
