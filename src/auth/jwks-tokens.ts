// Tokens of the shop's identity provider (docs/identity.md): RS256, ES256 or EdDSA, signed with
// the key their `kid` names in the JWKS. The signature is jose's compactVerify; the claims follow
// the HS256 rules for time (tokens.ts, timeCheck) and JWT_ISSUER, JWT_AUDIENCE, JWT_USER_CLAIM,
// JWT_ROLES_CLAIM for the rest.
import { compactVerify } from 'jose';
import { AppError } from '../errors.js';
import { parseId } from '../id-text.js';
import type { JwksAlgorithm, KeySet } from './key-set.js';
import { invalid, timeCheck, type Json, type Principal } from './tokens.js';

export interface JwksTokenOptions {
  keys: KeySet;
  /** JWT_ISSUER; empty: not checked. */
  issuer: string;
  /** JWT_AUDIENCE; empty: not checked. */
  audience: string;
  /** JWT_USER_CLAIM. */
  userClaim: string;
  /** JWT_ROLES_CLAIM. */
  rolesClaim: string;
  maxTtlSeconds: number;
}

/**
 * The claim `name`: the payload's own member of that name when it has one (Auth0's namespaced
 * `https://shop.example/roles` has dots), else the dotted path (Keycloak's `realm_access.roles`).
 */
export function claimAt(payload: Json, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let value: unknown = payload;
  for (const part of name.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, part)) return undefined;
    value = (value as Json)[part];
  }
  return value;
}

/** The roles a claim holds: absent is none; a string or an array of strings; anything else is refused. */
function rolesOf(claim: unknown): readonly string[] {
  if (claim === undefined) return [];
  if (typeof claim === 'string') return [claim];
  if (Array.isArray(claim) && claim.every((role) => typeof role === 'string')) return claim as string[];
  throw new AppError('UNAUTHORIZED', 'token roles claim must be a string or an array of strings');
}

const decoder = new TextDecoder();

/** Verifies a token whose header names a JWKS algorithm; rejects UNAUTHORIZED. */
export function createJwksTokenVerifier(options: JwksTokenOptions): (token: string, header: Json & { alg: JwksAlgorithm }) => Promise<Principal> {
  const { keys, issuer, audience, userClaim, rolesClaim } = options;
  const checkTimes = timeCheck(options.maxTtlSeconds);
  return async (token, header) => {
    const { alg, kid } = header;
    if (typeof kid !== 'string') throw new AppError('UNAUTHORIZED', 'token has no key id (kid)');
    const key = await keys.keyFor(kid, alg);
    let payload: unknown;
    try {
      // algorithms: the one the key was imported for, so the header cannot switch it.
      payload = JSON.parse(decoder.decode((await compactVerify(token, key, { algorithms: [alg] })).payload));
    } catch {
      throw invalid();
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw invalid();
    const claims = payload as Json;
    checkTimes(claims, Date.now());
    if (issuer && claims.iss !== issuer) throw new AppError('UNAUTHORIZED', 'token issuer (iss) is not JWT_ISSUER');
    if (audience && claims.aud !== audience && !(Array.isArray(claims.aud) && claims.aud.includes(audience))) {
      throw new AppError('UNAUTHORIZED', 'token audience (aud) does not name JWT_AUDIENCE');
    }
    const subject = claimAt(claims, userClaim);
    const userId = typeof subject === 'string' ? parseId(subject) : null;
    if (userId === null) throw new AppError('UNAUTHORIZED', `token ${userClaim} must be a positive 64-bit decimal user id`);
    const roles = rolesOf(claimAt(claims, rolesClaim));
    return { userId, admin: roles.includes('admin'), service: roles.includes('service'), ...(typeof claims.exp === 'number' ? { expiresAt: claims.exp * 1000 } : {}) };
  };
}
