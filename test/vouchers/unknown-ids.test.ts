import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createDb } from '../../src/infra/db/database.js';
import { EPOCH_MS } from '../../src/ids/snowflake.js';
import { createVoucherDirectory, GAP_TTL_MS } from '../../src/vouchers/directory.js';
import { createVoucherRepository } from '../../src/vouchers/repository.js';
import type { Voucher } from '../../src/vouchers/voucher.js';
import { createVoucher, startSecondInstance, startTestApp, suiteScope } from '../support/helpers.js';
import { waitFor } from '../../support/wait.js';

const t = await startTestApp(suiteScope(), 'unknown-ids');

/** A directory of its own ("a process"), on a pool that counts the statements it runs. */
function countedDirectory() {
  const counter = { queries: 0 };
  const db = createDb(t.env.DATABASE_URL!, 10, { log: (e) => void (e.level === 'query' && counter.queries++) });
  after(() => db.destroy());
  const vouchers = createVoucherRepository(db);
  return { directory: createVoucherDirectory(vouchers), vouchers, counter };
}

/** `n` distinct ids no voucher has: anywhere in the 63 bits, snowflakes of the last day and the next, and neighbours of the vouchers. */
function unknownIds(n: number, taken: bigint[]): bigint[] {
  const ids = new Set<bigint>();
  const random63 = () => BigInt.asUintN(63, BigInt(Math.floor(Math.random() * 2 ** 53)) << 10n) || 1n;
  const snowflake = () => (BigInt(Date.now() - EPOCH_MS + Math.floor((Math.random() - 0.5) * 2 * 86_400_000)) << 22n) | BigInt(Math.floor(Math.random() * 2 ** 22));
  for (const v of taken) for (const d of [-2n, -1n, 1n, 2n]) ids.add(v + d);
  while (ids.size < n) ids.add(ids.size % 2 ? random63() : snowflake());
  for (const v of taken) ids.delete(v);
  return [...ids].slice(0, n);
}

async function voucherIds(count: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < count; i++) ids.push(BigInt((await createVoucher(t)).id));
  return ids;
}

/** A voucher row as create-voucher stores it, with an id of the test's choosing. */
function voucherWithId(id: bigint): Voucher {
  const now = Date.now();
  return {
    id, title: 'chosen id', kind: 'seckill', initialStock: 1, stock: 1, beginAt: new Date(now), endAt: new Date(now + 3_600_000),
    perUserLimit: 1, paymentTimeoutSeconds: 60, waitlist: false, claimToken: false, segmentShards: null, queue: null, price: 0, currency: 'USD',
  };
}

describe('unknown voucher ids', () => {
  it('when 1,000 distinct unknown ids are asked at once, then they cost a handful of queries, and the vouchers among them are found', async () => {
    const existing = await voucherIds(3);
    const { directory, counter } = countedDirectory();
    const unknown = unknownIds(1_000, existing);
    const answers = await Promise.all([...unknown, ...existing].map((id) => directory.get(id)));
    assert.deepEqual(answers.slice(0, unknown.length).filter((v) => v !== null), []);
    assert.deepEqual(answers.slice(unknown.length).map((v) => v?.id), existing);
    // One per gap around the 3 vouchers (4), two per voucher found (its neighbours, then its row).
    assert.ok(counter.queries <= 10, `${counter.queries} queries`);
    const before = counter.queries;
    for (const id of unknown) assert.equal(await directory.get(id), null);
    assert.ok(counter.queries - before <= 4, `asked again at once: ${counter.queries - before} more queries`); // a gap may have expired meanwhile
  });

  it('when a voucher is stored with an id just missed, then its creator finds it at once and another process within GAP_TTL_MS', async () => {
    const [known] = await voucherIds(1);
    const id = known! + 1_000n;
    const creator = countedDirectory();
    const other = countedDirectory();
    assert.equal(await creator.directory.get(id), null);
    assert.equal(await other.directory.get(id), null);
    // What create-voucher does: store the voucher, then tell its own process's directory.
    const voucher = voucherWithId(id);
    await creator.vouchers.insert(voucher);
    const stored = performance.now();
    creator.directory.remember(voucher);
    assert.equal((await creator.directory.get(id))?.id, id);
    await waitFor('the other process to find the voucher', async () => (await other.directory.get(id))?.id === id, GAP_TTL_MS + 2_000, 10);
    const unknownForMs = performance.now() - stored;
    assert.ok(unknownForMs <= GAP_TTL_MS + 100, `unknown to the other process for ${Math.round(unknownForMs)} ms`);
  });

  it('when a stored row names a voucher inside a gap just learned, then getStored reads it at once', async () => {
    const [known] = await voucherIds(1);
    const id = known! + 2_000n;
    const { directory, vouchers } = countedDirectory();
    assert.equal(await directory.get(id - 1n), null);
    await vouchers.insert(voucherWithId(id));
    assert.equal((await directory.getStored(id))?.id, id);
    assert.equal((await directory.get(id))?.id, id, 'and it is known from then on');
  });

  it('when an instance has just answered 404 for ids above every voucher, then a voucher created on another instance is found there within GAP_TTL_MS', async (ctx) => {
    const second = await startSecondInstance(ctx, t);
    const get = (app: typeof t.app, id: string) => app.inject({ method: 'GET', url: `/api/vouchers/${id}` });
    for (const app of [t.app, second.app]) assert.equal((await get(app, '9223372036854775807')).statusCode, 404);
    const v = await createVoucher(t);
    const created = performance.now();
    assert.equal((await get(t.app, v.id)).statusCode, 200, 'the creating instance knows it at once');
    await waitFor('the second instance to find the voucher', async () => (await get(second.app, v.id)).statusCode === 200, GAP_TTL_MS + 2_000, 10);
    const unknownForMs = performance.now() - created;
    assert.ok(unknownForMs <= GAP_TTL_MS + 100, `unknown to the second instance for ${Math.round(unknownForMs)} ms`);
  });
});
