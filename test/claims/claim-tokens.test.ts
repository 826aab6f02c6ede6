// Claim tokens: a voucher created with claimToken: true takes claims only with a fresh token that
// was issued to the same user for the same voucher, inside the sale window; every refusal is a
// 4xx that changes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';
import { assertInvariants, waitForDrain } from '../support/invariants.js';

const t = await startTestApp(suiteScope(), 'claimtokens');
await t.c.startPipeline();

async function fetchToken(voucherId: string, userId: number | null) {
  const headers = userId === null ? {} : { authorization: `Bearer ${await t.token(userId)}` };
  return t.app.inject({ method: 'GET', url: `/api/vouchers/${voucherId}/claim-token`, headers });
}

async function tokenFor(voucherId: string, userId: number): Promise<string> {
  const res = await fetchToken(voucherId, userId);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().token;
}

describe('claim tokens', () => {
  it('are issued to a signed-in buyer inside the sale window of a voucher that uses them, and live briefly', async () => {
    const v = await createVoucher(t, { claimToken: true });
    const before = Date.now();
    const res = await fetchToken(v.id, 1);
    assert.equal(res.statusCode, 200, res.body);
    const expiresAt = Date.parse(res.json().expiresAt);
    assert.ok(expiresAt > before && expiresAt <= Date.now() + 30_000, res.json().expiresAt);
    assert.equal(typeof res.json().token, 'string');

    const plain = await createVoucher(t);
    const early = await createVoucher(t, { claimToken: true, beginAt: new Date(Date.now() + 3_600_000), endAt: new Date(Date.now() + 7_200_000) });
    const late = await createVoucher(t, { claimToken: true, beginAt: new Date(Date.now() - 7_200_000), endAt: new Date(Date.now() - 1_000) });
    const refusals: [Awaited<ReturnType<typeof fetchToken>>, number, string][] = [
      [await fetchToken(v.id, null), 401, 'UNAUTHORIZED'],
      [await fetchToken(plain.id, 1), 404, 'CLAIM_TOKEN_NOT_OFFERED'],
      [await fetchToken('424242', 1), 404, 'VOUCHER_NOT_FOUND'],
      [await fetchToken(early.id, 1), 409, 'NOT_STARTED'],
      [await fetchToken(late.id, 1), 409, 'ENDED'],
    ];
    for (const [res, status, code] of refusals) assert.deepEqual([res.statusCode, res.json().code], [status, code], res.body);
  });

  it('when a claim comes without a token, with an expired, forged, another user\'s or another voucher\'s token, then 403 and nothing changes; with its own, it is admitted', async () => {
    const v = await createVoucher(t, { stock: 10, claimToken: true });
    const other = await createVoucher(t, { stock: 10, claimToken: true });
    const mine = await tokenFor(v.id, 1);
    const cases: [string, string | undefined, string, RegExp][] = [
      ['no token', undefined, 'CLAIM_TOKEN_REQUIRED', /Claim-Token/],
      ['expired', t.c.claimTokens.issue(BigInt(v.id), 1n, new Date(Date.now() - 1)), 'CLAIM_TOKEN_EXPIRED', /expired/],
      ["another user's", await tokenFor(v.id, 2), 'CLAIM_TOKEN_INVALID', /another user/],
      ["another voucher's", await tokenFor(other.id, 1), 'CLAIM_TOKEN_INVALID', /another voucher/],
      ['forged expiry', mine.replace(/\.(\d+)\./, (_, ms: string) => `.${Number(ms) + 60_000}.`), 'CLAIM_TOKEN_INVALID', /not valid/],
      ['garbage', 'not-a-token', 'CLAIM_TOKEN_INVALID', /not valid/],
    ];
    for (const [name, token, code, message] of cases) {
      const res = await claim(t, v.id, 1, token === undefined ? {} : { claimToken: token });
      assert.equal(res.statusCode, 403, `${name}: ${res.body}`);
      assert.equal(res.json().code, code, name);
      assert.match(res.json().message, message, name);
    }
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 10, 'refused claims took nothing');
    assert.deepEqual(view.buyers, {});

    const admitted = await claim(t, v.id, 1, { claimToken: mine });
    assert.equal(admitted.statusCode, 202, admitted.body);
    await waitForDrain(t.c, v.id);
    const truth = await assertInvariants(t.c, v.id, [admitted.json().orderId]);
    assert.equal(truth.redisStock, 9);
  });

  it('when a limited voucher uses claim tokens, then its synchronous claims need one too', async () => {
    const v = await createVoucher(t, { kind: 'limited', stock: 5, claimToken: true });
    assert.equal((await claim(t, v.id, 3)).json().code, 'CLAIM_TOKEN_REQUIRED');
    const res = await claim(t, v.id, 3, { claimToken: await tokenFor(v.id, 3) });
    assert.equal(res.statusCode, 201, res.body);
    const truth = await assertInvariants(t.c, v.id, [res.json().orderId]);
    assert.equal(truth.dbStock, 4);
  });

  it('when a voucher with claim tokens is sold out, then a claim without a token still hears 403, not SOLD_OUT', async () => {
    const v = await createVoucher(t, { stock: 1, claimToken: true });
    const bought = await claim(t, v.id, 4, { claimToken: await tokenFor(v.id, 4) });
    assert.equal(bought.statusCode, 202);
    for (const user of [5, 6, 7]) {
      assert.equal((await claim(t, v.id, user, { claimToken: await tokenFor(v.id, user) })).json().code, 'SOLD_OUT');
      assert.equal((await claim(t, v.id, user)).json().code, 'CLAIM_TOKEN_REQUIRED');
    }
    await waitForDrain(t.c, v.id);
    await assertInvariants(t.c, v.id, [bought.json().orderId]);
  });

  it('a voucher created without claimToken takes claims as before', async () => {
    const v = await createVoucher(t, { stock: 2 });
    const res = await claim(t, v.id, 8);
    assert.equal(res.statusCode, 202);
    await waitForDrain(t.c, v.id);
    await assertInvariants(t.c, v.id, [res.json().orderId]);
  });
});
