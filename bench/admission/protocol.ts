// Scenarios, and the line protocol between run.ts (driver) and server.ts (one child per scenario):
// the child prints one JSON message per line on stdout; the driver writes one command per line on
// its stdin and reads exactly one reply per command.

export const BASES = ['bare', 'admission', 'soldout'] as const;
export type Base = (typeof BASES)[number];

/**
 * Knobs, appended to admission/soldout with "+", each change ONE thing about the real app:
 *   stub-claim  the claim use case answers at once (no Redis): what the Redis round trip costs
 *   worker      adds the order pipeline (stream → MariaDB) to the process, as `seckill serve` runs
 *               it by default; without it the child is the API alone (`seckill serve --no-worker`)
 *   buckets     turns both token buckets on, too generous to refuse anyone (BUCKET_VOUCHER_RATE
 *               10,000,000/s, BUCKET_USER_RATE 10/s with one request per user): what taking the
 *               tokens costs
 *   keyed       every request carries its own Idempotency-Key, as careful clients send: on a
 *               sold-out voucher such a claim needs the caller's identity (a retry may be a replay),
 *               so it takes the full path (token check, validation) to the in-memory answer
 *   cluster     the server in CLUSTER_PROCESSES processes sharing the port (node:cluster), as
 *               `seckill serve` runs with API_PROCESSES=2; the only knob `bare` takes too
 *   console     an operator watches the sale: the console's live stream of the voucher
 *               (GET /api/vouchers/:id/live, one snapshot a second) is open for the whole scenario
 *   trace1, trace100  tracing on (OTEL_TRACES_SAMPLER=parentbased_traceidratio at 0.01 or 1, the
 *               claims sending no traceparent), its spans exported to an OTLP/HTTP receiver of the
 *               driver's that only counts them: what one trace per order costs the API
 *   node20, node26  the server child on Node 20 or 26 (the registry's binary package,
 *               bench/support/node-lines.ts) instead of the Node running the driver (24): the
 *               same work on each supported line and on the one before; `bare` takes them too
 * and what a 202 guarantees (ADMIT_DURABILITY), each on a Redis of the scenario's own
 * (scripts/redis-topology.sh), so that the three compare like with like:
 *   private     ADMIT_DURABILITY=memory on a redis-server without persistence (the reference)
 *   fsync       ADMIT_DURABILITY=fsync on a redis-server with appendonly yes, appendfsync always
 *   replica     ADMIT_DURABILITY=replica on a master with one replica (WAIT 1 after each admit call)
 */
export const KNOBS = ['stub-claim', 'worker', 'buckets', 'keyed', 'cluster', 'console', 'trace1', 'trace100', 'private', 'fsync', 'replica', 'node20', 'node26'] as const;
export type Knob = (typeof KNOBS)[number];

/** Processes of a `+cluster` server: one per core of this 2-core machine. */
export const CLUSTER_PROCESSES = 2;

/** The Redis topology and ADMIT_DURABILITY of each durability knob. */
export const DURABILITY_KNOBS = {
  private: { topology: ['single'], durability: 'memory' },
  fsync: { topology: ['single', '--aof', 'always'], durability: 'fsync' },
  replica: { topology: ['replica', '--min-replicas', '1'], durability: 'replica' },
} as const satisfies Partial<Record<Knob, { topology: string[]; durability: string }>>;

export type DurabilityKnob = keyof typeof DURABILITY_KNOBS;

/** The Node line a scenario's server runs on: its node knob's, else the driver's own. */
export const nodeLineOf = (s: Scenario): number | undefined => {
  const knob = s.knobs.find((k) => k.startsWith('node'));
  return knob ? Number(knob.slice('node'.length)) : undefined;
};

export const durabilityKnobOf = (s: Scenario): DurabilityKnob | undefined =>
  s.knobs.find((k): k is DurabilityKnob => k in DURABILITY_KNOBS);

export interface Scenario {
  /** As given on the command line, e.g. "admission+worker". */
  label: string;
  base: Base;
  knobs: Knob[];
}

export function parseScenario(label: string): Scenario {
  const [base = '', ...knobs] = label.split('+');
  if (!(BASES as readonly string[]).includes(base)) throw new Error(`unknown scenario "${base}" (one of ${BASES.join(', ')})`);
  for (const k of knobs) if (!(KNOBS as readonly string[]).includes(k)) throw new Error(`unknown knob "${k}" (one of ${KNOBS.join(', ')})`);
  if (base === 'bare' && knobs.some((k) => k !== 'cluster' && !k.startsWith('node'))) throw new Error('bare takes only the cluster and node knobs');
  return { label, base: base as Base, knobs: knobs as Knob[] };
}

/** Handed to the child in its environment (a secret does not belong on a command line). */
export interface ServerEnv {
  /** Redis prefix and database name of this child. */
  BENCH_NAME: string;
  BENCH_JWT_SECRET: string;
  BENCH_REDIS_URL: string;
  /** mysql://user@host:port, without a database. */
  BENCH_MYSQL_SERVER: string;
  /** The driver's OTLP receiver (scenarios with a trace knob). */
  BENCH_OTLP_URL?: string;
}

/** The share of claims a trace knob samples. */
export const traceRatioOf = (s: Scenario): number | undefined => {
  const knob = s.knobs.find((k) => k.startsWith('trace'));
  return knob ? Number(knob.slice('trace'.length)) / 100 : undefined;
};

export type Command = 'state' | 'profile-start' | 'profile-stop' | 'stop';

export type ServerMessage =
  | { type: 'ready'; port: number; path: string; stock: number | null }
  /** Redis stock of the voucher (null for bare) and the child's CPU time so far (user + system, µs). */
  | { type: 'state'; stock: number | null; cpuUs: number }
  | { type: 'profile'; file: string | null }
  | { type: 'stopped' }
  | { type: 'error'; message: string };
