// The sold-out snapshot (who may hear more than SOLD_OUT from memory: users with an idempotency
// record, users on the waitlist) is read in short HSCAN / ZSCAN steps between two reads of its
// version, not in one long command: it is complete, a user added while it is read is not missed
// (the read starts again), users removed meanwhile never hide users who stayed, and lists that
// keep growing or are too large give no snapshot to hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AdmitClaim, AdmitCode, MAX_ADMIT_BATCH } from '../../src/infra/redis/scripts/admission.js';
import { readSoldOutSnapshot } from '../../src/claims/sold-out-snapshot.js';
import { createScripts } from '../../src/infra/redis/scripts/index.js';
import type { RedisClient } from '../../src/infra/redis/client.js';
import { startTestApp, suiteScope } from '../support/helpers.js';

const t = await startTestApp(suiteScope(), 'snapshot', { RECONCILE_INTERVAL_MS: '0' });
const { redis, keys } = t.c;
const scripts = createScripts(redis, keys);
let nextVoucher = 700_000n;
let nextOrder = 1n;
let nextStranger = 5_000_000n;

const range = (n: number, from = 1) => Array.from({ length: n }, (_, i) => BigInt(from + i));
const claimOf = (userId: bigint, idempotencyKey?: string): AdmitClaim => ({ userId, orderId: nextOrder++, quantity: 1, idempotencyKey });

interface Sale {
  voucherId: bigint;
  /** The admit answer of the last claim: for a sold-out sale with a full waitlist, its version. */
  last: { code: AdmitCode; closedAtVersion?: string };
}

/**
 * A voucher whose users 1..keyed were admitted with an Idempotency-Key (the first `twice` of them
 * once more with another key), with `unitsLeft` units left; with `waiting`, it is sold out and
 * that many more users fill its waitlist.
 */
async function sale(keyed: number, { twice = 0, waiting = 0, unitsLeft = 0 } = {}): Promise<Sale> {
  const voucherId = nextVoucher++;
  const now = Date.now();
  await scripts.warm({
    voucherId,
    stock: keyed + twice + unitsLeft,
    beginMs: now - 60_000,
    endMs: now + 600_000,
    perUserLimit: 2,
    inflight: 0,
    expireAtSeconds: Math.ceil(now / 1000) + 3600,
    waitlistCap: waiting,
  });
  const claims = [
    ...range(keyed).map((u) => claimOf(u, 'a')),
    ...range(twice).map((u) => claimOf(u, 'b')),
    ...range(waiting, 1_000_000).map((u) => claimOf(u)),
  ];
  let last: Sale['last'] = { code: AdmitCode.MISSING };
  for (let i = 0; i < claims.length; i += MAX_ADMIT_BATCH) {
    const results = await scripts.admitMany(voucherId, claims.slice(i, i + MAX_ADMIT_BATCH));
    for (const [j, r] of results.entries()) assert.equal(r.code, i + j < keyed + twice ? AdmitCode.ADMITTED : AdmitCode.SOLD_OUT);
    last = results.at(-1)!;
  }
  return { voucherId, last };
}

/** A new user admitted with an Idempotency-Key: a new idempotency record, the version moves. */
async function admitStranger(voucherId: bigint) {
  const [r] = await scripts.admitMany(voucherId, [claimOf(nextStranger++, 'late')]);
  assert.equal(r!.code, AdmitCode.ADMITTED);
  return String(nextStranger - 1n);
}

/** The users both lists hold now, read whole (fine for a test, not for a live sale). */
async function listed(voucherId: bigint) {
  const fields = await redis.hkeys(keys.idempotency(voucherId));
  return {
    keyed: new Set(fields.map((f) => f.slice(0, f.indexOf(':')))),
    waiting: new Set(await redis.zrange(keys.waitlist(voucherId), '0', '-1')),
  };
}

interface Watched {
  client: RedisClient;
  /** Walks of the idempotency hash begun. */
  walks: number;
  scanSteps: number;
  /** The most elements one step answered. */
  largestStep: number;
}

/**
 * The client as the read sees it: its HSCAN and ZSCAN steps counted, and `before(command, n)`
 * run before the n-th call of each is sent, as if another client's command ran just then.
 */
function watched(before?: (command: 'hscan' | 'zscan', n: number) => Promise<void>): Watched {
  const calls = { hscan: 0, zscan: 0 };
  const w: Watched = {
    client: new Proxy(redis, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        if (prop !== 'hscan' && prop !== 'zscan') return value.bind(target);
        return async (...args: unknown[]) => {
          if (prop === 'hscan' && args[1] === '0') w.walks++;
          await before?.(prop, ++calls[prop]);
          const reply = (await value.apply(target, args)) as [string, string[]];
          w.scanSteps++;
          w.largestStep = Math.max(w.largestStep, reply[1].length / 2);
          return reply;
        };
      },
    }) as RedisClient,
    walks: 0,
    scanSteps: 0,
    largestStep: 0,
  };
  return w;
}

const MAX_USERS = 20_000;

describe('sold-out snapshot', () => {
  it('when a sold-out voucher has 12,000 idempotency records and 600 waiting users, then the snapshot holds them all, at the version admit answered, read in steps of a few hundred', async () => {
    const { voucherId, last } = await sale(10_000, { twice: 2_000, waiting: 600 });
    assert.ok(last.closedAtVersion, 'sold out with a full waitlist: admit answers closed, with a version');
    const w = watched();
    const s = await readSoldOutSnapshot(w.client, keys, voucherId, MAX_USERS);
    assert.ok(s && !s.tooLarge, 'a snapshot to hold');
    assert.equal(s.version, last.closedAtVersion);
    const truth = await listed(voucherId);
    assert.equal(truth.keyed.size, 10_000);
    assert.equal(truth.waiting.size, 600);
    assert.deepEqual(s.keyedUsers, truth.keyed);
    assert.deepEqual(s.waitingUsers, truth.waiting);
    assert.equal(w.walks, 1);
    assert.ok(w.largestStep <= 1_000, `one step answered ${w.largestStep} elements`);
    assert.ok(w.scanSteps >= 12_600 / 1_000, `${w.scanSteps} steps`);
  });

  it('when a user gets an idempotency record after the walk passed the records, then the read starts again and the snapshot holds them', async () => {
    const { voucherId } = await sale(600, { unitsLeft: 10 });
    let stranger = '';
    // The waitlist's walk comes after the records': a record made then is certainly missed.
    const w = watched(async (command, n) => {
      if (command === 'zscan' && n === 1) stranger = await admitStranger(voucherId);
    });
    const s = await readSoldOutSnapshot(w.client, keys, voucherId, MAX_USERS);
    assert.ok(s && !s.tooLarge);
    assert.equal(w.walks, 2, 'walked again after the version moved');
    assert.ok(s.keyedUsers.has(stranger), 'the user added during the first walk is in');
    assert.deepEqual(s.keyedUsers, (await listed(voucherId)).keyed);
    const [builtAt, listAdditions] = await redis.hmget(keys.voucher(voucherId), 'builtAt', 'listAdditions');
    assert.equal(s.version, `${builtAt}.${listAdditions}`, 'the version after the addition');
  });

  it('when the head of the waitlist leaves during the walk, then every user who stayed is in the snapshot', async () => {
    const { voucherId } = await sale(10, { waiting: 600 });
    let left: string[] = [];
    const w = watched(async (command, n) => {
      if (command !== 'zscan' || n !== 2) return;
      // As promotions take them: the longest waiting first, so every later user's rank moves.
      left = await redis.zrange(keys.waitlist(voucherId), '0', '299');
      await redis.zrem(keys.waitlist(voucherId), ...left);
    });
    const s = await readSoldOutSnapshot(w.client, keys, voucherId, MAX_USERS);
    assert.ok(s && !s.tooLarge);
    assert.equal(left.length, 300, 'the waitlist was walked in more than one step');
    assert.equal(w.walks, 1, 'a removal does not move the version');
    const stayed = (await listed(voucherId)).waiting;
    assert.equal(stayed.size, 300);
    for (const user of stayed) assert.ok(s.waitingUsers.has(user), `user ${user} stayed on the list and is missing`);
    for (const user of s.waitingUsers) assert.ok(stayed.has(user) || left.includes(user), `user ${user} was never on the list`);
  });

  it('when users keep getting idempotency records during every walk, then the read gives up: no snapshot', async () => {
    const { voucherId } = await sale(600, { unitsLeft: 10 });
    const w = watched(async (command) => {
      if (command === 'zscan') await admitStranger(voucherId);
    });
    assert.equal(await readSoldOutSnapshot(w.client, keys, voucherId, MAX_USERS), null);
    assert.equal(w.walks, 3);
  });

  it('when there are more records and waiting users than the process holds, or more arrive during the walk, then the snapshot is too large', async () => {
    const { voucherId } = await sale(600, { unitsLeft: 50 });
    const early = watched();
    const s = await readSoldOutSnapshot(early.client, keys, voucherId, 599);
    assert.equal(s?.tooLarge, true);
    assert.equal(early.scanSteps, 0, 'known too large before any walk');

    // Before the walk's first step, so the walk certainly sees them.
    const growing = watched(async (command, n) => {
      if (command === 'hscan' && n === 1) for (let i = 0; i < 50; i++) await admitStranger(voucherId);
    });
    const grown = await readSoldOutSnapshot(growing.client, keys, voucherId, 600);
    assert.equal(grown?.tooLarge, true);
    assert.equal(growing.walks, 1, 'the walk stopped at the cap, not walked again');
  });
});
