// The shop's JWKS (docs/identity.md): fetched at start, again when a token names a `kid` the set
// lacks — at most once every REFETCH_INTERVAL_MS, one fetch shared by every token waiting for
// it — and every REFRESH_MS in the background, so that a key the shop withdrew stops working.
// Never per request. A fetch that fails keeps the keys known before.
// jose's createRemoteJWKSet is not used: its cooldown counts from the last *successful* fetch, so
// with the provider down every unknown kid would fetch again.
import { importJWK, type JWK } from 'jose';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';

export const REFETCH_INTERVAL_MS = 5_000;
const REFRESH_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 5_000;

/** The algorithms a JWKS token may use, and the key each needs. */
const ALGORITHMS = {
  RS256: { kty: 'RSA', crv: undefined },
  ES256: { kty: 'EC', crv: 'P-256' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
} as const;
export type JwksAlgorithm = keyof typeof ALGORITHMS;

export const isJwksAlgorithm = (alg: unknown): alg is JwksAlgorithm => typeof alg === 'string' && Object.hasOwn(ALGORITHMS, alg);

export type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

interface Member {
  jwk: JWK;
  /** Imported on first use. */
  key?: Promise<VerifyKey>;
}

export interface KeySet {
  /**
   * The key `kid` names for `alg`. A kid the set lacks fetches it again first (when allowed);
   * still unknown, or a key of another algorithm: rejects UNAUTHORIZED.
   */
  keyFor(kid: string, alg: JwksAlgorithm): Promise<VerifyKey>;
  /** Settles when the fetch at start has ended, either way (a failure is logged). */
  readonly ready: Promise<void>;
  close(): void;
}

export interface KeySetOptions {
  url: string;
  log: Logger;
  /** A refresh dropped or changed a key: whatever was verified with it must be forgotten. */
  onKeysChanged?: () => void;
}

/** A public signing key usable for `alg`: its own `alg`, when present, must be that one. */
function fits(jwk: JWK, alg: JwksAlgorithm): boolean {
  const want = ALGORITHMS[alg];
  return (
    (jwk.alg === undefined || jwk.alg === alg) &&
    jwk.kty === want.kty &&
    (want.crv === undefined || jwk.crv === want.crv) &&
    (jwk.use === undefined || jwk.use === 'sig') &&
    (jwk.key_ops === undefined || (Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) &&
    jwk.d === undefined
  );
}

/** The set's members that have a kid, by kid; throws when the answer is not a JWKS. */
async function fetchSet(url: string, signal: AbortSignal): Promise<Map<string, Member[]>> {
  const response = await fetch(url, {
    signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]),
    redirect: 'error',
    headers: { accept: 'application/jwk-set+json, application/json' },
  });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`the JWKS answered HTTP ${response.status}`);
  }
  const body = (await response.json()) as { keys?: unknown };
  if (!Array.isArray(body?.keys)) throw new Error('the JWKS has no "keys" array');
  const set = new Map<string, Member[]>();
  for (const jwk of body.keys as JWK[]) {
    if (jwk === null || typeof jwk !== 'object' || typeof jwk.kid !== 'string') continue;
    set.set(jwk.kid, [...(set.get(jwk.kid) ?? []), { jwk }]);
  }
  return set;
}

const sameKeys = (a: Member[] | undefined, b: Member[] | undefined) =>
  a !== undefined && b !== undefined && JSON.stringify(a.map((m) => m.jwk)) === JSON.stringify(b.map((m) => m.jwk));

export function createKeySet({ url, log, onKeysChanged }: KeySetOptions): KeySet {
  let members = new Map<string, Member[]>();
  let lastFetchAt = -Infinity;
  let pending: Promise<void> | null = null;
  let closed = false;
  const abort = new AbortController();

  const load = (why: string): Promise<void> => {
    lastFetchAt = Date.now();
    pending = fetchSet(url, abort.signal)
      .then(
        (next) => {
          const changed = [...members].some(([kid, old]) => !sameKeys(old, next.get(kid)));
          for (const [kid, list] of next) if (sameKeys(list, members.get(kid))) next.set(kid, members.get(kid)!);
          members = next;
          log.debug({ url, kids: [...next.keys()] }, `JWKS fetched (${why})`);
          if (changed) onKeysChanged?.();
        },
        (err: unknown) => {
          if (!closed) log.warn({ err, url }, `the JWKS could not be fetched (${why}); the keys known before stay, a token with an unknown kid fetches it again (at most every ${REFETCH_INTERVAL_MS} ms)`);
        },
      )
      .finally(() => {
        pending = null;
      });
    return pending;
  };

  const ready = load('start');
  const refresh = setInterval(() => void (pending ?? load('refresh')), REFRESH_MS).unref();

  return {
    ready,
    async keyFor(kid, alg) {
      let list = members.get(kid);
      if (list === undefined) {
        if (pending) await pending;
        else if (Date.now() - lastFetchAt >= REFETCH_INTERVAL_MS) await load(`unknown kid ${JSON.stringify(kid.slice(0, 64))}`);
        list = members.get(kid);
        if (list === undefined) throw new AppError('UNAUTHORIZED', 'token key id (kid) is not in the JWKS');
      }
      const member = list.find((m) => fits(m.jwk, alg));
      if (member === undefined) throw new AppError('UNAUTHORIZED', `the JWKS key of this kid is not for ${alg}`);
      member.key ??= importJWK(member.jwk, alg);
      try {
        return await member.key;
      } catch {
        throw new AppError('UNAUTHORIZED', 'the JWKS key of this kid cannot be used');
      }
    },
    close() {
      closed = true;
      clearInterval(refresh);
      abort.abort();
    },
  };
}
