// Snowflake-style 64-bit ids: 41 bits of milliseconds since EPOCH_MS, 10 bits of worker id,
// 12 bits of sequence. Pure logic: the worker id comes from a lease (worker-lease.ts).
//
// Clock moving backwards is defined, not feared: the generator never reuses a timestamp. It keeps
// issuing from the last timestamp it used (a logical clock) and moves that forward by one
// millisecond whenever the 4096 sequence numbers of a millisecond are used up. Ids therefore stay
// unique and strictly increasing per generator; they run slightly ahead of the wall clock until
// the wall clock catches up. Nothing blocks or sleeps.

export const EPOCH_MS = Date.UTC(2024, 0, 1);
export const WORKER_BITS = 10;
export const SEQUENCE_BITS = 12;
export const MAX_WORKER_ID = (1 << WORKER_BITS) - 1;
const MAX_SEQUENCE = (1 << SEQUENCE_BITS) - 1;

export interface SnowflakeOptions {
  now?: () => number;
  /** Never issue a timestamp at or below this (the worker id's high-water mark). */
  startAfterMs?: number;
  /** Called once per backwards jump, with how far the clock went back. */
  onClockBackwards?: (driftMs: number) => void;
}

export class Snowflake {
  readonly workerId: number;
  private lastMs: number;
  private sequence = 0;
  private readonly now: () => number;
  private readonly onClockBackwards?: (driftMs: number) => void;
  private behind = false;

  constructor(workerId: number, options: SnowflakeOptions = {}) {
    this.workerId = workerId;
    if (!Number.isInteger(workerId) || workerId < 0 || workerId > MAX_WORKER_ID) {
      throw new RangeError(`worker id must be 0..${MAX_WORKER_ID}, got ${workerId}`);
    }
    this.now = options.now ?? Date.now;
    this.onClockBackwards = options.onClockBackwards;
    // Start past the high-water mark: sequence exhausted at startAfterMs forces the next millisecond.
    this.lastMs = options.startAfterMs ?? 0;
    this.sequence = MAX_SEQUENCE;
  }

  /** Highest timestamp (unix ms) used so far. */
  get lastTimestampMs(): number {
    return this.lastMs;
  }

  next(): bigint {
    const now = this.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
      this.behind = false;
    } else {
      if (now < this.lastMs && !this.behind) {
        this.behind = true;
        this.onClockBackwards?.(this.lastMs - now);
      }
      if (this.sequence < MAX_SEQUENCE) {
        this.sequence += 1;
      } else {
        this.lastMs += 1;
        this.sequence = 0;
      }
    }
    return (
      (BigInt(this.lastMs - EPOCH_MS) << BigInt(WORKER_BITS + SEQUENCE_BITS)) |
      (BigInt(this.workerId) << BigInt(SEQUENCE_BITS)) |
      BigInt(this.sequence)
    );
  }
}

/** Splits an id into its parts (diagnostics and tests). */
export function decodeId(id: bigint): { timestampMs: number; workerId: number; sequence: number } {
  return {
    timestampMs: Number(id >> BigInt(WORKER_BITS + SEQUENCE_BITS)) + EPOCH_MS,
    workerId: Number((id >> BigInt(SEQUENCE_BITS)) & BigInt(MAX_WORKER_ID)),
    sequence: Number(id & BigInt(MAX_SEQUENCE)),
  };
}
