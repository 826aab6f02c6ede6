// Use case: a buyer asks where they stand on a voucher's waitlist. The list lives in Redis only
// (a sorted set by enrolment time, written by the admit script): it is a courtesy queue, and the
// units it hands out are admitted by the same checks as any claim.
import type { RedisClient } from '../infra/redis/client.js';
import { AppError } from '../errors.js';
import type { KeySpace } from '../infra/redis/keys.js';
import type { VoucherDirectory } from '../vouchers/directory.js';
import { homeShard } from '../vouchers/segments.js';

export function waitlistPositionUseCase({ redis, keys, directory }: { redis: RedisClient; keys: KeySpace; directory: VoucherDirectory }) {
  return async function waitlistPosition(voucherId: bigint, userId: bigint): Promise<number> {
    const voucher = await directory.get(voucherId);
    if (!voucher) throw new AppError('VOUCHER_NOT_FOUND', `voucher ${voucherId} not found`);
    // A segmented voucher keeps a waitlist per segment: the place in the buyer's home segment's.
    const rank = voucher.waitlist ? await redis.zrank(keys.waitlist(voucherId, homeShard(voucher, userId, keys)), userId.toString()) : null;
    if (rank === null) throw new AppError('NOT_WAITLISTED', `you are not on the waitlist of voucher ${voucherId}`);
    return rank + 1;
  };
}
