// Buyers driven through a sale. Each buyer's request (a claim, a payment) is tried, and, as a
// careful client does, tried again after an answer that settles nothing (a 503, no answer; a claim
// with the same Idempotency-Key) until it is settled or the buyer runs out of tries or patience.
// Buyers come in a closed loop (`concurrency` lanes, each starting the next buyer as soon as its
// last one is done: the most the server takes) or an open one (`rate` a second, whatever the
// answers, at most `concurrency` at once: a steady crowd while a fault comes and goes).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

export interface BuyersOptions<B> {
  /** The next buyer, or undefined when no buyer is left. */
  next(): B | undefined;
  /**
   * One try of `buyer`'s request; resolves true when its outcome is settled, false to try again.
   * It records what it was answered: the driver keeps nothing.
   */
  attempt(buyer: B): Promise<boolean>;
  /** Buyers in flight at most (closed loop: exactly, while buyers are left). */
  concurrency: number;
  /** Open loop: buyers start at this many a second; late ones (all lanes busy) start when a lane frees. */
  rate?: number;
  /** No buyer starts after this long (ms); those in flight finish. */
  durationMs?: number;
  /** Aborting stops starting buyers; those in flight finish. */
  signal?: AbortSignal;
  /** Tries after the first one of an unsettled request, at most (default none) … */
  retries?: number;
  /** … none later than this long after the buyer's first try (ms) … */
  patienceMs?: number;
  /** … nor than this long after the drive began (ms): a fault that outlasts it ends the sale. */
  retryForMs?: number;
  /** Pause before each retry (default 100 ms). */
  retryPauseMs?: number;
}

export interface BuyersDrive {
  /** Resolves when no buyer is left to start and every started one has its last answer. */
  done: Promise<void>;
  /** Buyers started so far. */
  readonly started: number;
  /** Starts no more buyers; resolves with `done`. */
  stop(): Promise<void>;
}

/** Between two looks of the open loop at the clock: a buyer starts at most this late. */
const TICK_MS = 5;

export function driveBuyers<B>(o: BuyersOptions<B>): BuyersDrive {
  const begin = performance.now();
  const retries = o.retries ?? 0;
  const pauseMs = o.retryPauseMs ?? 100;
  const retryUntil = begin + (o.retryForMs ?? Infinity);
  const endAt = begin + (o.durationMs ?? Infinity);
  let started = 0;
  let stopped = false;
  const closed = () => stopped || o.signal?.aborted === true || performance.now() >= endAt;
  /** The next buyer to start, if the drive is still open. */
  const take = (): B | undefined => {
    const buyer = closed() ? undefined : o.next();
    if (buyer !== undefined) started++;
    return buyer;
  };

  async function serve(buyer: B): Promise<void> {
    const giveUpAt = performance.now() + (o.patienceMs ?? Infinity);
    for (let retry = 0; ; retry++) {
      if (await o.attempt(buyer)) return;
      const now = performance.now();
      if (retry >= retries || now > giveUpAt || now > retryUntil) return;
      await sleep(pauseMs);
    }
  }

  async function lane(): Promise<void> {
    for (let buyer = take(); buyer !== undefined; buyer = take()) await serve(buyer);
  }

  async function arrivals(rate: number): Promise<void> {
    const running = new Set<Promise<void>>();
    for (let open = true; open; ) {
      const due = Math.floor(((performance.now() - begin) * rate) / 1000);
      while (started < due && running.size < o.concurrency) {
        const buyer = take();
        if (buyer === undefined) {
          open = false;
          break;
        }
        const served: Promise<void> = serve(buyer).finally(() => running.delete(served));
        running.add(served);
      }
      if (closed()) open = false;
      if (open) await sleep(TICK_MS);
    }
    await Promise.all(running);
  }

  const done = o.rate === undefined ? Promise.all(Array.from({ length: o.concurrency }, lane)).then(() => undefined) : arrivals(o.rate);
  return {
    done,
    get started() {
      return started;
    },
    stop() {
      stopped = true;
      return done;
    },
  };
}
