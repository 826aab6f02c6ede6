// Claim tokens (the "hidden claim path"): for a voucher created with claimToken: true, a buyer
// first fetches a short-lived token bound to them and to the voucher, and presents it as header
// `Claim-Token` with the claim. A script that skips the fetch, or replays another buyer's token,
// is refused before any stock is looked at. The token is `voucherId.userId.expiresMs.mac`, the mac
// an HMAC-SHA256 under a key derived from JWT_SECRET for this purpose only, so no bearer token is
// ever a claim token or the other way round. Verified in memory: no Redis, no database. Not
// single-use: repeats are bounded by the per-user limit, Idempotency-Key and the buckets.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

export interface ClaimTokens {
  issue(voucherId: bigint, userId: bigint, expiresAt: Date): string;
  /** Throws CLAIM_TOKEN_REQUIRED / CLAIM_TOKEN_INVALID / CLAIM_TOKEN_EXPIRED unless `token` admits this claim. */
  check(token: string | undefined, voucherId: bigint, userId: bigint): void;
}

export function createClaimTokens(secret: string, now: () => number = Date.now): ClaimTokens {
  const key = Buffer.from(hkdfSync('sha256', secret, '', 'seckill claim token v1', 32));
  const mac = (payload: string) => createHmac('sha256', key).update(payload).digest();

  return {
    issue(voucherId, userId, expiresAt) {
      const payload = `${voucherId}.${userId}.${expiresAt.getTime()}`;
      return `${payload}.${mac(payload).toString('base64url')}`;
    },
    check(token, voucherId, userId) {
      if (!token) throw new AppError('CLAIM_TOKEN_REQUIRED', 'this voucher needs a Claim-Token header: GET /api/vouchers/:id/claim-token first');
      const cut = token.lastIndexOf('.');
      if (cut < 0) throw new AppError('CLAIM_TOKEN_INVALID', 'the claim token is not valid');
      const payload = token.slice(0, cut);
      const given = Buffer.from(token.slice(cut + 1), 'base64url');
      const expected = mac(payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new AppError('CLAIM_TOKEN_INVALID', 'the claim token is not valid');
      }
      const [tokenVoucher, tokenUser, expiresMs] = payload.split('.');
      if (tokenVoucher !== voucherId.toString()) throw new AppError('CLAIM_TOKEN_INVALID', 'the claim token was issued for another voucher');
      if (tokenUser !== userId.toString()) throw new AppError('CLAIM_TOKEN_INVALID', 'the claim token was issued to another user');
      if (Number(expiresMs) <= now()) throw new AppError('CLAIM_TOKEN_EXPIRED', 'the claim token has expired; fetch a new one');
    },
  };
}
