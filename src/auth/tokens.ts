// HS256 bearer tokens (docs/api.md, "Identity"): `sub` = user id, `role: "admin"` grants admin routes.
// Verification is synchronous and hand-written on node:crypto: it runs on every claim, and
// fast-jwt's general verifier (decoder, validator tables, error objects) cost twice the HMAC
// itself. It accepts what fast-jwt's createVerifier({ algorithms: ['HS256'] }) accepts: three
// base64url segments, header and payload JSON objects, alg exactly HS256, no `crit`, a signature
// equal in constant time, `nbf`/`exp` numbers honoured when present. Tokens are signed by fast-jwt.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { AppError } from '../errors.js';
import { parseId } from '../id-text.js';

export interface Principal {
  userId: bigint;
  admin: boolean;
  /** When the token stops being valid (epoch ms), if it says; a stream ends then. */
  expiresAt?: number;
}

export interface TokenService {
  verify(authorization: string | undefined): Principal;
  /** ttlSeconds 0 = no expiry; negative = already expired (tests). */
  sign(principal: Principal, ttlSeconds: number): Promise<string>;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

type Json = Record<string, unknown>;

/** The JSON object a base64url segment encodes, or null. */
function jsonObject(segment: string): Json | null {
  if (!BASE64URL.test(segment)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
  } catch {
    return null;
  }
}

const invalid = () => new AppError('UNAUTHORIZED', 'invalid token');

/** The token's payload when its signature, header and time claims hold; throws UNAUTHORIZED. */
function createHs256Verifier(secret: string): (token: string) => Json {
  if (!secret) throw new Error('an HS256 secret must not be empty');
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  // Every token of this service carries the same header segment: one accepted is not parsed again.
  let knownHeader = '';
  return (token) => {
    const first = token.indexOf('.');
    const last = token.lastIndexOf('.');
    if (first <= 0 || last <= first + 1 || last === token.length - 1) throw invalid();
    const headerSegment = token.slice(0, first);
    if (headerSegment !== knownHeader) {
      const header = jsonObject(headerSegment);
      // alg exactly HS256 (no "none", no other family: algorithm confusion); crit names
      // extensions we do not understand, so a token carrying one is refused.
      if (header === null || header.alg !== 'HS256' || header.crit !== undefined) throw invalid();
      knownHeader = headerSegment;
    }
    const signatureSegment = token.slice(last + 1);
    if (!BASE64URL.test(signatureSegment)) throw invalid();
    const expected = createHmac('sha256', key).update(token.slice(0, last)).digest();
    const signature = Buffer.from(signatureSegment, 'base64url');
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw invalid();
    const payload = jsonObject(token.slice(first + 1, last));
    if (payload === null) throw invalid();
    const now = Date.now();
    const { nbf, exp } = payload;
    if (nbf !== undefined && (typeof nbf !== 'number' || now < nbf * 1000)) throw invalid();
    if (exp !== undefined) {
      if (typeof exp !== 'number') throw invalid();
      if (now > exp * 1000) throw new AppError('UNAUTHORIZED', 'token expired');
    }
    return payload;
  };
}

export function createTokenService(secret: string): TokenService {
  const verifier = createHs256Verifier(secret);
  const signer = createSigner({ key: secret, algorithm: 'HS256' });
  return {
    verify(authorization) {
      if (!authorization?.startsWith('Bearer ')) throw new AppError('UNAUTHORIZED', 'missing bearer token');
      const payload = verifier(authorization.slice(7).trim());
      const userId = typeof payload.sub === 'string' ? parseId(payload.sub) : null;
      if (userId === null) throw new AppError('UNAUTHORIZED', 'token subject must be a positive 64-bit decimal user id');
      return { userId, admin: payload.role === 'admin', ...(typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {}) };
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
