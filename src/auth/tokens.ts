// HS256 bearer tokens (API.md "Identity"): `sub` = user id, `role: "admin"` grants admin routes.
// fast-jwt verifies synchronously (an HMAC on the event loop costs a few µs; an async WebCrypto
// round trip per request cost more than the whole admission).
import { createSigner, createVerifier, TokenError } from 'fast-jwt';
import { AppError } from '../errors.js';
import { parseId } from '../id-text.js';

export interface Principal {
  userId: bigint;
  admin: boolean;
}

export interface TokenService {
  verify(authorization: string | undefined): Principal;
  /** ttlSeconds 0 = no expiry; negative = already expired (tests). */
  sign(principal: Principal, ttlSeconds: number): Promise<string>;
}

export function createTokenService(secret: string): TokenService {
  // No verdict cache: with a distinct token per buyer it cost more (LRU upkeep) than it saved.
  const verifier = createVerifier({ key: secret, algorithms: ['HS256'] });
  const signer = createSigner({ key: secret, algorithm: 'HS256' });
  return {
    verify(authorization) {
      if (!authorization?.startsWith('Bearer ')) throw new AppError('UNAUTHORIZED', 'missing bearer token');
      let payload: { sub?: unknown; role?: unknown };
      try {
        payload = verifier(authorization.slice(7).trim());
      } catch (err) {
        const expired = err instanceof TokenError && err.code === TokenError.codes.expired;
        throw new AppError('UNAUTHORIZED', expired ? 'token expired' : 'invalid token');
      }
      const userId = typeof payload.sub === 'string' ? parseId(payload.sub) : null;
      if (userId === null) throw new AppError('UNAUTHORIZED', 'token subject must be a positive 64-bit decimal user id');
      return { userId, admin: payload.role === 'admin' };
    },
    async sign({ userId, admin }, ttlSeconds) {
      const now = Math.floor(Date.now() / 1000);
      return signer({
        sub: userId.toString(),
        iat: now,
        ...(admin ? { role: 'admin' } : {}),
        ...(ttlSeconds !== 0 ? { exp: now + ttlSeconds } : {}),
      });
    },
  };
}
