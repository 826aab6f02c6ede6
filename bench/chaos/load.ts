// Buyers under a fault: each buyer makes one purchase with an Idempotency-Key of its own and, as
// a careful client does, sends it again with the same key after an answer that settles nothing
// (503, 429, no answer) until it is settled or its patience runs out. Every attempt is recorded
// with what it was answered; later the driver reads each acknowledged order back.
import { Pool } from 'undici';
import type { Recorder } from './history.js';
import { buyerToken } from './engine.js';

export interface LoadOptions {
  origins: string[];
  voucherId: string;
  recorder: Recorder;
  firstUser: number;
  /** Claims started per second at most (buyers arrive at this rate). */
  rate: number;
  /** How long buyers keep arriving (ms). */
  durationMs: number;
  /** How long one buyer keeps retrying after its first attempt (ms). */
  patienceMs: number;
  /** An attempt not answered within this long is unknown (ms). */
  timeoutMs?: number;
  retryPauseMs?: number;
  maxInFlight?: number;
}

const SETTLES = (status: number) => status !== 503 && status !== 429;

export interface Load {
  done: Promise<void>;
  /** Buyers started so far. */
  readonly buyers: number;
  close(): Promise<void>;
}

export function startLoad(o: LoadOptions): Load {
  const timeoutMs = o.timeoutMs ?? 3_000;
  const pause = o.retryPauseMs ?? 100;
  const pools = o.origins.map((origin) => new Pool(origin, { connections: 64, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }));
  let next = 0;
  let buyers = 0;
  let inFlight = 0;
  const maxInFlight = o.maxInFlight ?? 256;

  async function attempt(user: string, key: string): Promise<boolean> {
    const pool = pools[next++ % pools.length]!;
    const at = Date.now();
    let status: number | null = null;
    let code: string | null = null;
    let orderId: string | null = null;
    let waitlisted: boolean | undefined;
    try {
      const res = await pool.request({
        path: `/api/vouchers/${o.voucherId}/orders`,
        method: 'POST',
        headers: { authorization: `Bearer ${await buyerToken(user)}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: '{"quantity":1}',
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.body.text();
      status = res.statusCode;
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      orderId = typeof body.orderId === 'string' ? body.orderId : null;
      code = typeof body.code === 'string' ? body.code : null;
      if (typeof body.waitlisted === 'boolean') waitlisted = body.waitlisted;
    } catch {
      status = null; // no answer (timeout, reset): unknown
    }
    o.recorder.recordClaim({ id: `${user}:${at}:${next}`, at, voucherId: o.voucherId, userId: user, quantity: 1, idempotencyKey: key, status, code, orderId, waitlisted, doneAt: Date.now() });
    return status !== null && SETTLES(status);
  }

  async function buyer(user: string) {
    const key = `chaos-${user}`;
    const giveUpAt = Date.now() + o.patienceMs;
    while (!(await attempt(user, key)) && Date.now() < giveUpAt) await new Promise((r) => setTimeout(r, pause));
  }

  const running = new Set<Promise<void>>();
  const startedAt = Date.now();
  let stopped = false;
  const done = (async () => {
    const intervalMs = 1_000 / o.rate;
    while (!stopped && Date.now() - startedAt < o.durationMs) {
      const due = Math.floor((Date.now() - startedAt) / intervalMs);
      while (buyers < due && inFlight < maxInFlight) {
        const user = String(o.firstUser + buyers++);
        inFlight++;
        const p = buyer(user).finally(() => {
          inFlight--;
          running.delete(p);
        });
        running.add(p);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all(running);
  })();

  return {
    done,
    get buyers() {
      return buyers;
    },
    async close() {
      stopped = true;
      await done;
      await Promise.all(pools.map((p) => p.close()));
    },
  };
}

/** Reads every acknowledged order back (as its buyer), recording each answer. */
export async function readBack(origins: string[], recorder: Recorder, orders: { orderId: string; userId: string }[], concurrency = 32): Promise<void> {
  const pool = new Pool(origins[0]!, { connections: concurrency });
  try {
    let i = 0;
    const worker = async () => {
      while (i < orders.length) {
        const { orderId, userId } = orders[i++]!;
        const at = Date.now();
        let status: number | null = null;
        let orderStatus: string | null = null;
        let code: string | null = null;
        try {
          const res = await pool.request({ path: `/api/orders/${orderId}`, method: 'GET', headers: { authorization: `Bearer ${await buyerToken(userId)}` }, signal: AbortSignal.timeout(5_000) });
          const body = JSON.parse(await res.body.text()) as Record<string, unknown>;
          status = res.statusCode;
          orderStatus = typeof body.status === 'string' ? body.status : null;
          code = typeof body.code === 'string' ? body.code : null;
        } catch {
          status = null;
        }
        recorder.recordRead({ at, orderId, userId, status, orderStatus, code });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await pool.close();
  }
}
