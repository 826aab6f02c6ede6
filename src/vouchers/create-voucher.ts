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
}

export interface CreateVoucherDeps {
  ids: IdGenerator;
  vouchers: VoucherRepository;
  redisState: VoucherRedisState;
  directory: VoucherDirectory;
  placeSegments: SegmentPlacer;
  /** SHARDS: a voucher has at most this many segments, each on a shard of its own. */
  shards: number;
}

function parseTime(field: string, text: string): Date {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new AppError('INVALID_REQUEST', `${field} must be an ISO-8601 date-time`);
  return new Date(ms);
}

export function createVoucherUseCase({ ids, vouchers, redisState, directory, placeSegments, shards }: CreateVoucherDeps) {
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
    const id = ids.next();
    const voucher: Voucher = {
      id,
      title: input.title,
      kind: input.kind,
      initialStock: input.stock,
      stock: input.stock,
      beginAt,
      endAt,
      perUserLimit: input.perUserLimit ?? 1,
      paymentTimeoutSeconds: input.paymentTimeoutSeconds ?? 900,
      waitlist: input.waitlist ?? false,
      claimToken: input.claimToken ?? false,
      segmentShards: await placeSegments(id, segments),
    };
    await vouchers.insert(voucher);
    // If this fails the voucher still exists; its first claim rebuilds the state from the database.
    if (kindOf(voucher).redisGated) await redisState.create(voucher);
    directory.remember(voucher);
    return voucher;
  };
}
