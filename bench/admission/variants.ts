// Token verifiers for the investigation variants of server.ts (see README "Findings"). They keep
// the contract of src/auth/tokens.ts (HS256 only, `sub` = positive 64-bit id, `role: "admin"`,
// expired → "token expired") and change only HOW the signature is checked, to measure what the
// verification costs. They are benchmark instruments, not part of the application.
import { createHmac, timingSafeEqual, webcrypto } from 'node:crypto';
import { jwtVerify } from 'jose';
import type { Principal, TokenService } from '../../src/auth/tokens.js';
import { AppError } from '../../src/errors.js';
import { parseId } from '../../src/ids/parse.js';

const unauthorized = (reason: string) => new AppError('UNAUTHORIZED', reason);

function principal(payload: { sub?: unknown; role?: unknown }): Principal {
  const userId = typeof payload.sub === 'string' ? parseId(payload.sub) : null;
  if (userId === null) throw unauthorized('token subject must be a positive 64-bit decimal user id');
  return { userId, admin: payload.role === 'admin' };
}

function bearer(authorization: string | undefined): string {
  if (!authorization?.startsWith('Bearer ')) throw unauthorized('missing bearer token');
  return authorization.slice(7).trim();
}

/**
 * jose as today, but with the HMAC key imported once. Today src/auth/tokens.ts hands jose a
 * Uint8Array, and jose then runs crypto.subtle.importKey on every single verification.
 */
export async function joseWithImportedKey(secret: string, base: TokenService): Promise<TokenService> {
  const key = await webcrypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  return {
    sign: base.sign,
    async verify(authorization) {
      let payload;
      try {
        ({ payload } = await jwtVerify(bearer(authorization), key, { algorithms: ['HS256'] }));
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw unauthorized((err as { code?: string }).code === 'ERR_JWT_EXPIRED' ? 'token expired' : 'invalid token');
      }
      return principal(payload);
    },
  };
}

/**
 * HS256 checked synchronously with node:crypto: no WebCrypto job, no libuv thread-pool hop, no
 * promise per verification. ~2 µs of CPU for a 150-byte token.
 */
export function syncHmac(secret: string, base: TokenService): TokenService {
  const key = Buffer.from(secret, 'utf8');
  const decode = (part: string): Record<string, unknown> => {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a JSON object');
    return value as Record<string, unknown>;
  };
  return {
    sign: base.sign,
    async verify(authorization) {
      const token = bearer(authorization);
      const parts = token.split('.');
      if (parts.length !== 3) throw unauthorized('invalid token');
      const [h, p, s] = parts as [string, string, string];
      let payload: Record<string, unknown>;
      try {
        const header = decode(h);
        // Like jose: only HS256, and no critical extensions we do not understand.
        if (header.alg !== 'HS256' || header.crit !== undefined || header.b64 !== undefined) throw new Error('header');
        // Compare the base64url text, not a lenient decode of it: the signature has one encoding.
        const expected = Buffer.from(createHmac('sha256', key).update(`${h}.${p}`).digest('base64url'));
        const given = Buffer.from(s);
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('signature');
        payload = decode(p);
      } catch {
        throw unauthorized('invalid token');
      }
      const now = Math.floor(Date.now() / 1000);
      for (const claim of ['exp', 'nbf', 'iat'] as const) {
        if (payload[claim] !== undefined && !Number.isFinite(payload[claim])) throw unauthorized('invalid token');
      }
      if (typeof payload.exp === 'number' && payload.exp <= now) throw unauthorized('token expired');
      if (typeof payload.nbf === 'number' && payload.nbf > now) throw unauthorized('invalid token');
      return principal(payload);
    },
  };
}
