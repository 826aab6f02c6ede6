// Scenarios, and the line protocol between run.ts (driver) and server.ts (one child per scenario).
// The child prints one JSON message per line on stdout; the driver writes one command per line on
// its stdin and reads exactly one reply per command. stderr is left to the child for diagnostics.

/** What a server child serves. */
export const BASES = ['bare', 'admission', 'soldout'] as const;
export type Base = (typeof BASES)[number];

/**
 * Investigation knobs (README "Findings"), appended to admission/soldout with "+": each swaps ONE
 * piece of the real app for a cheaper one, to measure what that piece costs.
 *   jose-key    jose as today, but the HMAC key imported once instead of on every verification
 *   sync-hmac   HS256 verified synchronously with node:crypto (no WebCrypto, no thread pool)
 *   stub-claim  the claim use case answers at once: no Redis round trip, no Lua script
 *   no-autopipeline  ioredis auto-pipelining off on the app's Redis connection
 */
export const KNOBS = ['jose-key', 'sync-hmac', 'stub-claim', 'no-autopipeline'] as const;
export type Knob = (typeof KNOBS)[number];

export interface Scenario {
  /** As given on the command line, e.g. "admission+sync-hmac". */
  label: string;
  base: Base;
  knobs: Knob[];
}

/** Parses "base[+knob...]"; throws with a one-line reason. */
export function parseScenario(label: string): Scenario {
  const [base = '', ...knobs] = label.split('+');
  if (!(BASES as readonly string[]).includes(base)) throw new Error(`unknown scenario "${base}" (one of ${BASES.join(', ')})`);
  for (const k of knobs) if (!(KNOBS as readonly string[]).includes(k)) throw new Error(`unknown knob "${k}" (one of ${KNOBS.join(', ')})`);
  if (knobs.length && base === 'bare') throw new Error('knobs apply to admission and soldout only');
  if (knobs.includes('jose-key') && knobs.includes('sync-hmac')) throw new Error('jose-key and sync-hmac exclude each other');
  return { label, base: base as Base, knobs: knobs as Knob[] };
}

/** Environment the driver hands to a child (a secret does not belong on the command line). */
export interface ServerEnv {
  /** Unique name: Redis prefix and database name of this child. */
  BENCH_NAME: string;
  BENCH_JWT_SECRET: string;
  BENCH_REDIS_URL: string;
  /** mysql://user@host:port, without a database. */
  BENCH_MYSQL_SERVER: string;
}

export type Command = 'state' | 'profile-start' | 'profile-stop' | 'stop';

export type ServerMessage =
  | {
      type: 'ready';
      scenario: string;
      port: number;
      /** Path to load: the claim route of the voucher (or the same shape for `bare`). */
      path: string;
      voucherId: string | null;
      /** Redis stock when the child became ready (null for `bare`). */
      stock: number | null;
    }
  | {
      type: 'state';
      stock: number | null;
      /** CPU time (user + system, µs) the child has used since it started. */
      cpuUs: number;
    }
  | { type: 'profile'; file: string | null }
  | { type: 'stopped' }
  | { type: 'error'; message: string };
