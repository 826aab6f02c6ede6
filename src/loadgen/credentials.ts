// Who the load generator acts as: one admin (creates the voucher, reads stats, asks for the audit)
// and many distinct buyers, each with a bearer token of their own. Tokens are either signed here
// with the deployment's JWT secret or read from a file made elsewhere (e.g. by `seckill token`).
import { readFile } from 'node:fs/promises';
import { parseId } from '../id-text.js';
import { createTokenService } from '../auth/tokens.js';

export interface Credentials {
  /** `Authorization` header value of the admin. */
  admin: string;
  /** `Authorization` header value of each buyer, by buyer index (one distinct user each). */
  buyers: string[];
}

export interface MintOptions {
  secret: string;
  buyers: number;
  /** User id of buyer 0; the others follow. */
  firstUserId: bigint;
  ttlSeconds: number;
}

/** The admin signs as user 1 (role admin); buyers are firstUserId, firstUserId + 1, … */
export async function mintCredentials({ secret, buyers, firstUserId, ttlSeconds }: MintOptions): Promise<Credentials> {
  const tokens = createTokenService(secret);
  const sign = async (userId: bigint, admin: boolean) => `Bearer ${await tokens.sign({ userId, admin }, ttlSeconds)}`;
  return {
    admin: await sign(1n, true),
    buyers: await Promise.all(Array.from({ length: buyers }, (_, i) => sign(firstUserId + BigInt(i), false))),
  };
}

/** The claims of a JWT, read without verifying it (the deployment verifies). */
function claimsOf(token: string): { sub?: unknown; role?: unknown } | null {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown; role?: unknown };
  } catch {
    return null;
  }
}

/**
 * A token file: one bearer token per line (blank lines and `#` comments ignored). Tokens with
 * `role: "admin"` are admins (the first one is used); every other token is a buyer, and no two
 * buyers may share a user id (the run's per-buyer checks rely on it).
 */
export async function readTokenFile(path: string, maxBuyers?: number): Promise<Credentials> {
  const lines = (await readFile(path, 'utf8')).split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  let admin: string | undefined;
  const buyers: string[] = [];
  const seen = new Set<string>();
  for (const [n, raw] of lines.entries()) {
    const token = raw.replace(/^Bearer\s+/i, '');
    const claims = claimsOf(token);
    if (!claims || typeof claims.sub !== 'string' || parseId(claims.sub) === null) {
      throw new Error(`${path}: line ${n + 1} is not a JWT with a user id in its "sub" claim`);
    }
    if (claims.role === 'admin') {
      admin ??= `Bearer ${token}`;
      continue;
    }
    if (maxBuyers !== undefined && buyers.length >= maxBuyers) continue;
    if (seen.has(claims.sub)) throw new Error(`${path}: user ${claims.sub} appears twice; every buyer needs a token of their own`);
    seen.add(claims.sub);
    buyers.push(`Bearer ${token}`);
  }
  if (!admin) throw new Error(`${path}: no admin token (one with role "admin", e.g. from \`seckill token --user 1 --admin\`)`);
  if (!buyers.length) throw new Error(`${path}: no buyer tokens`);
  return { admin, buyers };
}
