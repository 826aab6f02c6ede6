// Token buckets in Redis, shared by every API instance: two instances (own containers and apps, one
// database and key prefix) take claims for the same voucher, and together they stay within ONE
// voucher bucket and ONE bucket per buyer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, createVoucher, startSecondInstance, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

const VOUCHER_RATE = 40;
const VOUCHER_BURST = 20;
const USER_RATE = 5;
const USER_BURST = 3;

const a = await startTestApp(suiteScope(), 'buckets', {
  BUCKET_VOUCHER_RATE: String(VOUCHER_RATE),
  BUCKET_VOUCHER_BURST: String(VOUCHER_BURST),
  BUCKET_USER_RATE: String(USER_RATE),
  BUCKET_USER_BURST: String(USER_BURST),
});
const b = await startSecondInstance(suiteScope(), a);
await a.c.startPipeline();

let nextUser = 1_000;

interface Outcome {
  admitted: string[];
  byInstance: [number, number];
  limited: { retryAfter: string | undefined; body: Record<string, unknown> }[];
  other: string[];
  seconds: number;
}

/**
 * `loops` concurrent clients per instance send claims until `ms` have passed (each claim from a
 * new buyer unless `user` is given). `seconds` runs from before the first request to after the
 * last answer, so `burst + rate × seconds` bounds what any correct bucket lets through.
 */
async function hammer(voucherId: string, ms: number, loops: number, user?: number): Promise<Outcome> {
  const out: Outcome = { admitted: [], byInstance: [0, 0], limited: [], other: [], seconds: 0 };
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    [a, b].flatMap((t, i) =>
      Array.from({ length: loops }, async () => {
        while (performance.now() < deadline) {
          const res = await claim(t, voucherId, user ?? nextUser++);
          if (res.statusCode === 202 || res.statusCode === 201) {
            out.admitted.push(res.json().orderId);
            out.byInstance[i]!++;
          } else if (res.statusCode === 429) out.limited.push({ retryAfter: res.headers['retry-after'] as string | undefined, body: res.json() });
          else out.other.push(res.body);
        }
      }),
    ),
  );
  out.seconds = (performance.now() - started) / 1000;
  return out;
}

function assertRateLimitedAnswers(o: Outcome) {
  assert.ok(o.limited.length > 0, 'some claims were refused');
  for (const r of o.limited) {
    assert.equal(r.body.code, 'RATE_LIMITED');
    assert.equal(typeof r.body.message, 'string');
    assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
  }
  assert.deepEqual(o.other, [], 'no other answers');
}

describe('token buckets across two instances', () => {
  it('when two instances take claims for one voucher as fast as they can, then together they admit burst + rate × time, not twice that', async () => {
    const v = await createVoucher(a, { stock: 100_000 });
    const o = await hammer(v.id, 2_000, 6);
    const bound = VOUCHER_BURST + VOUCHER_RATE * o.seconds;
    assert.ok(o.admitted.length <= bound + 1, `admitted ${o.admitted.length} > ${bound.toFixed(1)} in ${o.seconds.toFixed(2)} s`);
    // The clients keep the bucket empty; only a machine stalling the clients themselves for long
    // stretches (the bucket refills up to its burst, no further) could leave less than this.
    assert.ok(o.admitted.length >= 0.8 * bound, `admitted only ${o.admitted.length} of ${bound.toFixed(1)} in ${o.seconds.toFixed(2)} s`);
    assert.ok(o.byInstance.every((n) => n > 0), `both instances admitted: ${o.byInstance}`);
    assertRateLimitedAnswers(o);

    await waitForDrain(a.c, v.id);
    const truth = await assertInvariants(a.c, v.id, o.admitted);
    assert.equal(truth.redisStock, 100_000 - o.admitted.length, 'a refused claim takes no stock');
  });

  it('when a quiet voucher gets a burst of claims, then the burst passes at once and the rest wait for the refill', async () => {
    const v = await createVoucher(a, { stock: 1_000 });
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => claim(i % 2 ? a : b, v.id, nextUser++)));
    const seconds = (performance.now() - started) / 1000;
    const admitted = answers.filter((r) => r.statusCode === 202).map((r) => r.json().orderId as string);
    assert.ok(admitted.length >= VOUCHER_BURST, `only ${admitted.length} of a burst of ${VOUCHER_BURST}`);
    assert.ok(admitted.length <= VOUCHER_BURST + VOUCHER_RATE * seconds + 1, `${admitted.length} admitted in ${seconds.toFixed(2)} s`);
    assert.equal(answers.filter((r) => r.statusCode === 429).length, 60 - admitted.length);

    await waitForDrain(a.c, v.id);
    await assertInvariants(a.c, v.id, admitted);
  });

  it('when one buyer retries through both instances, then their own bucket holds them to its burst + rate × time', async () => {
    const v = await createVoucher(a, { stock: 1_000, perUserLimit: 1_000 });
    const o = await hammer(v.id, 1_500, 1, nextUser++);
    const bound = USER_BURST + USER_RATE * o.seconds;
    assert.ok(o.admitted.length <= bound + 1, `admitted ${o.admitted.length} > ${bound.toFixed(1)} in ${o.seconds.toFixed(2)} s`);
    assert.ok(o.admitted.length >= 0.7 * bound, `admitted only ${o.admitted.length} of ${bound.toFixed(1)}`);
    assertRateLimitedAnswers(o);
    // Another buyer is not held back by the first one's bucket.
    const other = await claim(b, v.id, nextUser++);
    assert.equal(other.statusCode, 202, other.body);

    await waitForDrain(a.c, v.id);
    await assertInvariants(a.c, v.id, [...o.admitted, other.json().orderId]);
  });

  it('holds at the extremes: a bucket of ten million per second refuses nobody, one of one per second the second claim for about a second', async () => {
    const voucherId = 42n;
    const fast = { voucher: { rate: 10_000_000, burst: 10_000_000 }, user: { rate: 0, burst: 0 } };
    const waits = await Promise.all(Array.from({ length: 500 }, (_, i) => a.c.scripts.takeTokens(voucherId, BigInt(i), fast)));
    assert.deepEqual(new Set(waits), new Set([0]));
    const slow = { voucher: { rate: 0, burst: 0 }, user: { rate: 1, burst: 1 } };
    const first = performance.now();
    assert.equal(await a.c.scripts.takeTokens(voucherId, 7n, slow), 0);
    const wait = await b.c.scripts.takeTokens(voucherId, 7n, slow);
    // The refill is one token a second from the first take, in Redis time: what is left of that
    // second, at most the time the two calls took apart (a loaded box may take more than 100 ms).
    const apart = Math.ceil(performance.now() - first);
    assert.ok(wait > 0 && wait >= 1_000 - apart && wait <= 1_000, `wait ${wait} ms, the calls ${apart} ms apart`);
    assert.ok((await a.c.redis.pttl(a.c.keys.userBucket(voucherId, 7n))) <= 1_000, 'the key expires when the bucket is full again');
  });

  it('when a common voucher gets a burst of claims, then the same buckets hold before its SQL transaction', async () => {
    const v = await createVoucher(a, { kind: 'common', stock: 1_000 });
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => claim(i % 2 ? a : b, v.id, nextUser++)));
    const seconds = (performance.now() - started) / 1000;
    const admitted = answers.filter((r) => r.statusCode === 201).map((r) => r.json().orderId as string);
    const limited = answers.filter((r) => r.statusCode === 429);
    assert.equal(admitted.length + limited.length, 60, answers.map((r) => r.body).join('\n'));
    assert.ok(admitted.length >= VOUCHER_BURST && admitted.length <= VOUCHER_BURST + VOUCHER_RATE * seconds + 1, `${admitted.length} in ${seconds.toFixed(2)} s`);
    for (const r of limited) assert.equal(r.json().code, 'RATE_LIMITED');

    const truth = await assertInvariants(a.c, v.id, admitted);
    assert.equal(truth.dbStock, 1_000 - admitted.length, 'a refused claim takes no stock');
  });
});

describe('the per-buyer bucket with the default configuration', async () => {
  const shipped = await startTestApp(suiteScope(), 'buckets-default');
  await shipped.c.startPipeline();

  it('when one buyer fires 200 claims at once, then most are answered 429 with Retry-After and one unit is sold', async () => {
    const v = await createVoucher(shipped, { stock: 100, perUserLimit: 1 });
    const answers = await Promise.all(Array.from({ length: 200 }, () => claim(shipped, v.id, 77)));
    const limited = answers.filter((r) => r.statusCode === 429);
    const admitted = answers.filter((r) => r.statusCode === 202).map((r) => r.json().orderId as string);
    // Through the bucket: its burst (twice the rate); of those one is admitted, the rest exceed the limit.
    assert.ok(limited.length >= 200 - 2 * shipped.c.config.bucketUserRate - 1, `${limited.length} of 200 refused`);
    for (const r of limited) {
      assert.equal(r.json().code, 'RATE_LIMITED');
      assert.ok(Number(r.headers['retry-after']) >= 1);
    }
    assert.equal(admitted.length, 1);
    assert.equal(answers.length - limited.length - admitted.length, answers.filter((r) => r.json().code === 'LIMIT_EXCEEDED').length);
    await waitForDrain(shipped.c, v.id);
    const truth = await assertInvariants(shipped.c, v.id, admitted);
    assert.equal(truth.dbStock, 99);
  });
});
