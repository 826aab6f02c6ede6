// Buyers under a fault: each buyer makes one purchase with an Idempotency-Key of its own and, as
// a careful client does, sends it again with the same key after an answer that settles nothing
// (503, 429, no answer) until it is settled or its patience runs out. Every attempt is recorded
// with what it was answered; later the driver reads each acknowledged order back.
import { Pool } from 'undici';
import { driveBuyers } from '../../src/loadgen/buyers.js';
import { httpClaims } from '../../src/loadgen/http-claims.js';
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
  const claims = httpClaims({ origins: o.origins, voucherId: o.voucherId, token: buyerToken, connections: 64, timeoutMs: o.timeoutMs ?? 3_000 });
  let attempts = 0;

  async function attempt(user: string): Promise<boolean> {
    const key = `chaos-${user}`;
    const at = Date.now();
    attempts++;
    let status: number | null = null;
    let code: string | null = null;
    let orderId: string | null = null;
    let waitlisted: boolean | undefined;
    try {
      const res = await claims.send(user, key);
      status = res.status;
      const body = res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {};
      orderId = typeof body.orderId === 'string' ? body.orderId : null;
      code = typeof body.code === 'string' ? body.code : null;
      if (typeof body.waitlisted === 'boolean') waitlisted = body.waitlisted;
    } catch {
      status = null; // no answer (timeout, reset): unknown
    }
    o.recorder.recordClaim({ id: `${user}:${at}:${attempts}`, at, voucherId: o.voucherId, userId: user, quantity: 1, idempotencyKey: key, status, code, orderId, waitlisted, doneAt: Date.now() });
    return status !== null && SETTLES(status);
  }

  let arrived = 0;
  const drive = driveBuyers({
    next: () => String(o.firstUser + arrived++),
    attempt,
    rate: o.rate,
    durationMs: o.durationMs,
    concurrency: o.maxInFlight ?? 256,
    retries: Infinity,
    patienceMs: o.patienceMs,
    retryPauseMs: o.retryPauseMs,
  });
  return {
    done: drive.done,
    get buyers() {
      return drive.started;
    },
    async close() {
      await drive.stop();
      await claims.close();
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
