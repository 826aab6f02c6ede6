// HS256 bearer tokens (API.md "Identity"): `sub` = user id, `role: "admin"` grants admin routes.
import { SignJWT, jwtVerify, errors } from 'jose';
import { AppError } from '../errors.js';
import { parseId } from '../ids/parse.js';

export interface Principal {
  userId: bigint;
  admin: boolean;
}

export interface TokenService {
  verify(authorization: string | undefined): Promise<Principal>;
  sign(principal: Principal, ttlSeconds: number): Promise<string>;
}

export function createTokenService(secret: string): TokenService {
  const key = new TextEncoder().encode(secret);
  return {
    async verify(authorization) {
      if (!authorization?.startsWith('Bearer ')) throw new AppError('UNAUTHORIZED', 'missing bearer token');
      let payload;
      try {
        ({ payload } = await jwtVerify(authorization.slice(7).trim(), key, { algorithms: ['HS256'] }));
      } catch (err) {
        const reason = err instanceof errors.JWTExpired ? 'token expired' : 'invalid token';
        throw new AppError('UNAUTHORIZED', reason);
      }
      const userId = typeof payload.sub === 'string' ? parseId(payload.sub) : null;
      if (userId === null) throw new AppError('UNAUTHORIZED', 'token subject must be a positive 64-bit decimal user id');
      return { userId, admin: payload.role === 'admin' };
    },
    async sign({ userId, admin }, ttlSeconds) {
      const jwt = new SignJWT(admin ? { role: 'admin' } : {})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(userId.toString())
        .setIssuedAt();
      if (ttlSeconds !== 0) jwt.setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds);
      return jwt.sign(key);
    },
  };
}
