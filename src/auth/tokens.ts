// HS256 bearer tokens (docs/api.md, "Identity"): `sub` = user id, `role: "admin"` grants admin routes.
// Verification is synchronous and hand-written on node:crypto: it runs on every claim, and
// fast-jwt's general verifier (decoder, validator tables, error objects) cost twice the HMAC
// itself. It accepts what fast-jwt's createVerifier({ algorithms: ['HS256'] }) accepts: three
// base64url segments, header and payload JSON objects, alg exactly HS256, no `crit`, a signature
// equal in constant time, `nbf`/`exp` numbers honoured when present; beyond that, `exp` is
// required and bounded by JWT_MAX_TTL_SECONDS, so a leaked token does not work for ever. Tokens
// are signed by fast-jwt.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { settings } from '../config.js';
import { AppError } from '../errors.js';
import { parseId } from '../id-text.js';

/**
 * How far a token's `exp` may lie beyond JWT_MAX_TTL_SECONDS from now: the clock of whoever
 * signed it may run this much ahead of ours.
 */
export const CLOCK_SKEW_SECONDS = 60;

export interface Principal {
  userId: bigint;
  admin: boolean;
  /** The shop's backend: confirms payments, refunds, cancels and reads any order; not the admin routes. */
  service?: boolean;
  /** When the token stops being valid (epoch ms), if it says; a stream ends then. */
  expiresAt?: number;
}

export interface TokenService {
  verify(authorization: string | undefined): Principal;
  /**
   * ttlSeconds 1..maxTtlSeconds; 0 = no expiry, only when maxTtlSeconds is 0; negative = already
   * expired (tests). Another ttl throws: it is the caller's mistake.
   */
  sign(principal: Principal, ttlSeconds: number): Promise<string>;
}

export interface TokenOptions {
  /** JWT_MAX_TTL_SECONDS (its default when left out); 0: tokens without `exp` are accepted. */
  maxTtlSeconds?: number;
}

const DEFAULT_MAX_TTL_SECONDS = settings.jwtMaxTtlSeconds.parse(settings.jwtMaxTtlSeconds.default);

/**
 * Why a token may not be signed with `ttlSeconds` under `maxTtlSeconds` (the end of a sentence
 * that starts with the ttl), or null when it may.
 */
export function ttlProblem(ttlSeconds: number, maxTtlSeconds: number): string | null {
  if (maxTtlSeconds === 0) return null;
  if (ttlSeconds === 0) return `means no expiry, allowed only when JWT_MAX_TTL_SECONDS is 0 (it is ${maxTtlSeconds})`;
  if (ttlSeconds > maxTtlSeconds) return `is longer than JWT_MAX_TTL_SECONDS (${maxTtlSeconds} s)`;
  return null;
}

/** `preferred`, shortened to what `maxTtlSeconds` allows. */
export function ttlWithin(preferred: number, maxTtlSeconds: number): number {
  return maxTtlSeconds === 0 ? preferred : Math.min(preferred, maxTtlSeconds);
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

export type Json = Record<string, unknown>;

/** The JSON object a base64url segment encodes, or null. */
export function jsonObject(segment: string): Json | null {
  if (!BASE64URL.test(segment)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
  } catch {
    return null;
  }
}

export const invalid = () => new AppError('UNAUTHORIZED', 'invalid token');

/**
 * The time rules of every bearer token, whoever signed it: `nbf` honoured, `exp` required (unless
 * maxTtlSeconds is 0) and no further ahead than JWT_MAX_TTL_SECONDS plus the clock skew.
 * Throws UNAUTHORIZED.
 */
export function timeCheck(maxTtlSeconds: number): (payload: Json, now: number) => void {
  // The latest `exp` accepted, as a distance from now (ms).
  const furthestExpMs = maxTtlSeconds === 0 ? Infinity : (maxTtlSeconds + CLOCK_SKEW_SECONDS) * 1000;
  const tooLong = `token lifetime exceeds the maximum of ${maxTtlSeconds} s`;
  return ({ nbf, exp }, now) => {
    if (nbf !== undefined && (typeof nbf !== 'number' || now < nbf * 1000)) throw invalid();
    if (exp === undefined) {
      if (maxTtlSeconds !== 0) throw new AppError('UNAUTHORIZED', 'token has no expiry (exp)');
    } else {
      if (typeof exp !== 'number') throw invalid();
      if (now > exp * 1000) throw new AppError('UNAUTHORIZED', 'token expired');
      if (exp * 1000 - now > furthestExpMs) throw new AppError('UNAUTHORIZED', tooLong);
    }
  };
}

/** The token's payload when its signature, header and time claims hold; throws UNAUTHORIZED. */
function createHs256Verifier(secret: string, maxTtlSeconds: number): (token: string) => Json {
  if (!secret) throw new Error('an HS256 secret must not be empty');
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const checkTimes = timeCheck(maxTtlSeconds);
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
    checkTimes(payload, Date.now());
    return payload;
  };
}

export function createTokenService(secret: string, { maxTtlSeconds = DEFAULT_MAX_TTL_SECONDS }: TokenOptions = {}): TokenService {
  const verifier = createHs256Verifier(secret, maxTtlSeconds);
  const signer = createSigner({ key: secret, algorithm: 'HS256' });
  return {
    verify(authorization) {
      if (!authorization?.startsWith('Bearer ')) throw new AppError('UNAUTHORIZED', 'missing bearer token');
      const payload = verifier(authorization.slice(7).trim());
      const userId = typeof payload.sub === 'string' ? parseId(payload.sub) : null;
      if (userId === null) throw new AppError('UNAUTHORIZED', 'token subject must be a positive 64-bit decimal user id');
      return { userId, admin: payload.role === 'admin', service: payload.role === 'service', ...(typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {}) };
    },
    async sign({ userId, admin, service }, ttlSeconds) {
      const problem = ttlProblem(ttlSeconds, maxTtlSeconds);
      if (problem !== null) throw new Error(`ttl ${ttlSeconds} ${problem}`);
      const now = Math.floor(Date.now() / 1000);
      return signer({
        sub: userId.toString(),
        iat: now,
        ...(admin ? { role: 'admin' } : service ? { role: 'service' } : {}),
        ...(ttlSeconds !== 0 ? { exp: now + ttlSeconds } : {}),
      });
    },
  };
}
