// A steady sale for the fault tests: `buyers` distinct users claim one unit each, `concurrency`
// at a time, each with an Idempotency-Key of their own; a claim answered 503 or cut off is tried
// again with the same key (as a careful client does), up to `retries` times (the buyers' closed
// loop of src/loadgen/buyers.ts). Every answer is kept with the time it arrived, so a test can ask
// which admissions came after its fault. Claims go through app.inject (injectClaims) or real HTTP
// (httpClaims of src/loadgen/http-claims.ts).
import assert from 'node:assert/strict';
import { driveBuyers } from '../../src/loadgen/buyers.js';
import type { TestApp } from './helpers.js';

export interface ClaimAnswer {
  user: number;
  status: number;
  /** 202: the order's id. */
  orderId?: string;
  /** Error answers: the contract's code. */
  code?: string;
  retryAfter?: string;
  /** No HTTP answer at all (connection reset or refused). */
  error?: string;
  /** performance.now() when the answer (or the error) arrived. */
  at: number;
}

export type SendClaim = (user: number, idempotencyKey: string) => Promise<{ status: number; body: string; headers: Record<string, unknown> }>;

export interface SaleOptions {
  send: SendClaim;
  firstUser: number;
  buyers: number;
  concurrency: number;
  /** Extra tries of a claim answered 503 or cut off (0: none). */
  retries?: number;
  /** Pause before a retry. */
  retryPauseMs?: number;
  /** No retry starts later than this many ms after the sale began: a fault that outlasts it ends the sale, not the test's time. */
  retryForMs?: number;
}

export interface Sale {
  answers: ClaimAnswer[];
  /** Resolves when every buyer has their last answer. */
  done: Promise<void>;
  /** Ids of the orders answered 202 (after `since`, a performance.now() time, when given). */
  admitted(since?: number): string[];
}

export function startSale({ send, firstUser, buyers, concurrency, retries = 0, retryPauseMs = 100, retryForMs = Infinity }: SaleOptions): Sale {
  const answers: ClaimAnswer[] = [];
  const attempt = async (user: number) => {
    let answer: ClaimAnswer;
    try {
      const res = await send(user, `sale-${user}`);
      const body = res.body ? (JSON.parse(res.body) as { orderId?: string; code?: string }) : {};
      const retryAfter = res.headers['retry-after'];
      answer = { user, status: res.status, orderId: body.orderId, code: body.code, retryAfter: retryAfter === undefined ? undefined : String(retryAfter), at: performance.now() };
    } catch (err) {
      answer = { user, status: 0, error: (err as Error).message, at: performance.now() };
    }
    answers.push(answer);
    return answer.status !== 0 && answer.status !== 503;
  };
  let next = 0;
  const { done } = driveBuyers({ next: () => (next < buyers ? firstUser + next++ : undefined), attempt, concurrency, retries, retryPauseMs, retryForMs });
  return {
    answers,
    done,
    admitted: (since = -Infinity) => answers.filter((a) => a.status === 202 && a.at >= since).map((a) => a.orderId!),
  };
}

/** Claims through app.inject, for faults of Redis or the database rather than of the network. */
export function injectClaims(t: TestApp, voucherId: string): SendClaim {
  return async (user, key) => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/vouchers/${voucherId}/orders`,
      headers: { authorization: `Bearer ${await t.token(user)}`, 'idempotency-key': key },
    });
    return { status: res.statusCode, body: res.body, headers: res.headers };
  };
}

/** Every answer of the sale is a 202 or an error in the contract's shape (a 503 with Retry-After). */
export function assertContractAnswers(sale: Sale): void {
  for (const a of sale.answers) {
    if (a.status === 202 || a.status === 0) continue;
    assert.ok(a.code, `answer ${a.status} without a code`);
    if (a.status === 503) assert.ok(a.retryAfter, '503 without Retry-After');
    assert.ok([409, 429, 503].includes(a.status), `unexpected ${a.status} ${a.code}`);
  }
}
