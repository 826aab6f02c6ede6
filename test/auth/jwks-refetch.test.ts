import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createIdentity } from '../../src/auth/identity.js';
import { REFETCH_INTERVAL_MS } from '../../src/auth/key-set.js';
import { createTokenService } from '../../src/auth/tokens.js';
import { createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';
import { signingKey, signToken, startJwksServer, type SigningKey } from './jwks-server.js';

const scope = suiteScope();
const first = await signingKey('ES256', 'es-2026-01');
const jwks = await startJwksServer(scope, [first]);
const t = await startTestApp(scope, 'auth_jwks_refetch', { JWT_JWKS_URL: jwks.url, BUCKET_USER_RATE: '0' });

const claim = async (voucherId: string, key: SigningKey, sub: string, header: Record<string, unknown> = {}) =>
  (await t.app.inject({ method: 'POST', url: `/api/vouchers/${voucherId}/orders`, headers: { authorization: `Bearer ${await signToken(key, { sub }, header)}` } })).statusCode;
const statusOf = async (token: string) => (await t.app.inject({ method: 'GET', url: '/api/orders', headers: { authorization: `Bearer ${token}` } })).statusCode;
/** Resolves once `ms` have passed since the JWKS server's last fetch. */
const sinceLastFetch = (ms: number) => sleep(Math.max(0, jwks.lastFetchAt + ms - Date.now()));

// Both wait out the 5 s between fetches: side by side.
describe('the JWKS fetched again', { concurrency: true }, () => {
  it('when the shop rotates its key or tokens name unknown kids, then the set is fetched again at most once every 5 s, shared, and a verified token ends at its exp', async () => {
    assert.equal(jwks.fetches, 1, 'fetched once at start');
    const v = await createVoucher(t, { stock: 100, perUserLimit: 1 });
    // A token that expires within 2 s, verified once: the cache must not outlive its exp.
    const shortLived = await signToken(first, { sub: '9301', exp: Math.floor(Date.now() / 1000) + 2 });
    assert.equal(await statusOf(shortLived), 200);

    // Within 5 s of the last fetch, a burst of unknown kids is refused without fetching.
    const rotated = await signingKey('ES256', 'es-2026-02');
    jwks.publish([first, rotated]);
    const early = await Promise.all([...Array.from({ length: 20 }, (_, i) => claim(v.id, first, `${9400 + i}`, { kid: `stranger-${i}` })), claim(v.id, rotated, '9302')]);
    assert.deepEqual(new Set(early), new Set([401]));
    assert.equal(jwks.fetches, 1);

    await sleep(Math.max(0, (Math.floor(Date.now() / 1000) + 3) * 1000 - Date.now()));
    assert.equal(await statusOf(shortLived), 401, 'expired while remembered: refused');

    // 5 s on: unknown kids and the rotated key together share one fetch; the rotated key works.
    await sinceLastFetch(REFETCH_INTERVAL_MS + 50);
    const later = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => claim(v.id, first, `${9500 + i}`, { kid: `stranger-${i}` })),
      ...Array.from({ length: 5 }, (_, i) => claim(v.id, rotated, `${9310 + i}`)),
    ]);
    assert.deepEqual(later.slice(0, 20), Array(20).fill(401));
    assert.deepEqual(later.slice(20), Array(5).fill(202));
    assert.equal(jwks.fetches, 2, 'one fetch for the whole burst');
    assert.equal(await claim(v.id, first, '9320', { kid: 'stranger-again' }), 401);
    assert.equal(jwks.fetches, 2, 'and none again within 5 s');

    const view = await redisView(t, v.id);
    assert.equal(view.stock, 95);
    assert.deepEqual(Object.keys(view.buyers).sort(), ['9310', '9311', '9312', '9313', '9314']);
  });

  it('when the JWKS cannot be fetched at start, then HS256 still works and JWKS tokens are accepted once a later fetch succeeds', async () => {
    const down = await startJwksServer(scope, [first]);
    down.down = true;
    const tokens = createTokenService('test-secret-of-reasonable-length-0123456789');
    const identity = createIdentity({
      tokens,
      log: pino({ level: 'silent' }),
      config: { jwtJwksUrl: down.url, jwtIssuer: '', jwtAudience: '', jwtUserClaim: 'sub', jwtRolesClaim: 'role', jwtMaxTtlSeconds: 3600 },
    });
    scope.after(() => identity.close());
    await identity.ready; // settles although the fetch failed
    assert.equal(down.fetches, 1);
    const hs = identity.authenticate(`Bearer ${await tokens.sign({ userId: 3n, admin: false }, 60)}`);
    assert.equal(!(hs instanceof Promise) && hs.userId, 3n);
    down.down = false;
    const token = `Bearer ${await signToken(first, { sub: '4' })}`;
    // The failed attempt counts: the next one waits its 5 s.
    await assert.rejects(async () => identity.authenticate(token), /kid/);
    assert.equal(down.fetches, 1);
    await sleep(Math.max(0, down.lastFetchAt + REFETCH_INTERVAL_MS + 50 - Date.now()));
    assert.equal((await identity.authenticate(token)).userId, 4n);
    assert.equal(down.fetches, 2);
  });
});
