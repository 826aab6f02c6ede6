import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { exportSPKI, importJWK } from 'jose';
import { pino } from 'pino';
import { createIdentity } from '../../src/auth/identity.js';
import { createTokenService, type Principal } from '../../src/auth/tokens.js';
import { AppError } from '../../src/errors.js';
import { waitFor } from '../../support/wait.js';
import { createVoucher, redisView, startTestApp, suiteScope } from '../support/helpers.js';
import { AUDIENCE, ISSUER, signingKey, signToken, startJwksServer } from './jwks-server.js';

const scope = suiteScope();
const rsa = await signingKey('RS256', 'rsa-1');
const ec = await signingKey('ES256', 'ec-1');
const ed = await signingKey('EdDSA', 'ed-1', null); // no `alg` in the JWK: its key type decides
const rs384 = await signingKey('RS256', 'rsa-384', 'RS384'); // an RSA key the shop published for RS384 only
const jwks = await startJwksServer(scope, [rsa, ec, ed, rs384]);
const t = await startTestApp(scope, 'auth_jwks', { JWT_JWKS_URL: jwks.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, BUCKET_USER_RATE: '0' });
await t.c.startWorkers();

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const claimWith = (voucherId: string, token: string) => t.app.inject({ method: 'POST', url: `/api/vouchers/${voucherId}/orders`, headers: bearer(token) });

describe('tokens of the shop identity provider on the API', () => {
  it('when buyers sign in with RS256, ES256 and EdDSA tokens, then each claim is admitted for the user the token names and stored', async () => {
    const v = await createVoucher(t, { stock: 10, perUserLimit: 1 });
    const buyers = [
      { key: rsa, user: '9101' },
      { key: ec, user: '9102' },
      { key: ed, user: '9103' },
    ];
    for (const { key, user } of buyers) {
      const token = await signToken(key, { sub: user });
      const res = await claimWith(v.id, token);
      assert.equal(res.statusCode, 202, `${key.alg}: ${res.body}`);
      const orderId = res.json().orderId as string;
      // The buyer reads the order with the same token (now a cache hit) once the worker stored it.
      const order = await waitFor(`${key.alg} order stored`, async () => {
        const read = await t.app.inject({ method: 'GET', url: `/api/orders/${orderId}`, headers: bearer(token) });
        assert.equal(read.statusCode, 200, read.body);
        return read.json().status === 'pending_payment' && read.json();
      });
      assert.equal(order.userId, user);
    }
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 7);
    assert.deepEqual(view.buyers, { 9101: 1, 9102: 1, 9103: 1 });
  });

  it('when a JWKS token carries roles, then admin opens the admin routes and service or none does not', async () => {
    const create = async (role: unknown) =>
      t.app.inject({
        method: 'POST',
        url: '/api/vouchers',
        headers: bearer(await signToken(ec, { sub: '1', ...(role === undefined ? {} : { role }) })),
        payload: { title: 'jwks', kind: 'seckill', stock: 1, beginAt: new Date().toISOString(), endAt: new Date(Date.now() + 60_000).toISOString() },
      });
    assert.equal((await create(['viewer', 'admin'])).statusCode, 201);
    assert.equal((await create('admin')).statusCode, 201);
    assert.equal((await create('service')).statusCode, 403);
    assert.equal((await create(undefined)).statusCode, 403);
    assert.equal((await create(7)).statusCode, 401);
  });

  it('when a token is from another issuer or audience, names no known kid, or mixes algorithms, then it is refused 401 and nothing is claimed', async () => {
    const v = await createVoucher(t, { stock: 5 });
    const now = Math.floor(Date.now() / 1000);
    // HS256 signed with the shop's public key as the secret: the classic confusion attack.
    const publicPem = await exportSPKI((await importJWK(rsa.publicJwk, 'RS256')) as never);
    const confusedInput = `${b64({ alg: 'HS256', typ: 'JWT', kid: rsa.kid })}.${b64({ sub: '9201', exp: now + 60, iss: ISSUER, aud: AUDIENCE })}`;
    const refused = {
      'other issuer': await signToken(rsa, { sub: '9201', iss: 'https://evil.test' }),
      'other audience': await signToken(rsa, { sub: '9201', aud: ['other', 'api'] }),
      'no audience': await signToken(rsa, { sub: '9201', aud: undefined }),
      'unknown kid': await signToken(rsa, { sub: '9201' }, { kid: 'nobody' }),
      'no kid': await signToken(rsa, { sub: '9201' }, { kid: undefined }),
      'JWK alg RS384, token RS256': await signToken(rs384, { sub: '9201' }),
      'ES256 header on an RSA kid': await signToken(ec, { sub: '9201' }, { kid: rsa.kid }),
      'HS256 with the public key as secret': `${confusedInput}.${createHmac('sha256', publicPem).update(confusedInput).digest('base64url')}`,
      'alg none': `${b64({ alg: 'none', kid: rsa.kid })}.${b64({ sub: '9201', exp: now + 60, iss: ISSUER, aud: AUDIENCE })}.`,
      'signature of another key': (await signToken(rsa, { sub: '9201' })).replace(/\.[^.]+$/, '.' + (await signToken(ec, { sub: '9201' }, { alg: 'ES256' })).split('.')[2]),
      expired: await signToken(ec, { sub: '9201', exp: now - 5 }),
      'no exp': await signToken(ec, { sub: '9201', exp: undefined }),
      'exp beyond JWT_MAX_TTL_SECONDS': await signToken(ec, { sub: '9201', exp: now + 86_400 + 3_600 }),
      'sub not a user id': await signToken(ec, { sub: 'alice' }),
    };
    for (const [why, token] of Object.entries(refused)) {
      const res = await claimWith(v.id, token);
      assert.equal(res.statusCode, 401, `${why}: ${res.body}`);
      assert.equal(res.json().code, 'UNAUTHORIZED', why);
    }
    const view = await redisView(t, v.id);
    assert.equal(view.stock, 5);
    assert.deepEqual(view.buyers, {});
    // The same claims pass with aud an array naming JWT_AUDIENCE, and HS256 keeps working beside JWKS.
    assert.equal((await claimWith(v.id, await signToken(rsa, { sub: '9201', aud: ['other', AUDIENCE] }))).statusCode, 202);
    assert.equal((await claimWith(v.id, await t.token(9202))).statusCode, 202);
    assert.deepEqual((await redisView(t, v.id)).buyers, { 9201: 1, 9202: 1 });
  });
});

describe('identity claims (JWT_USER_CLAIM, JWT_ROLES_CLAIM)', () => {
  const tokens = createTokenService('test-secret-of-reasonable-length-0123456789');
  const identityWith = async (userClaim: string, rolesClaim: string) => {
    const identity = createIdentity({
      tokens,
      log: pino({ level: 'silent' }),
      config: { jwtJwksUrl: jwks.url, jwtIssuer: '', jwtAudience: '', jwtUserClaim: userClaim, jwtRolesClaim: rolesClaim, jwtMaxTtlSeconds: 3600 },
    });
    scope.after(() => identity.close());
    await identity.ready;
    return identity;
  };
  const refusal = async (run: () => unknown) => {
    await assert.rejects(async () => run(), (err) => err instanceof AppError && err.code === 'UNAUTHORIZED');
  };

  it('when the roles live at a dotted path (Keycloak realm_access.roles) and the user id in a custom claim, then both are read', async () => {
    const identity = await identityWith('uid', 'realm_access.roles');
    const token = await signToken(ed, { sub: 'f81d4fae-uuid', uid: '77', realm_access: { roles: ['offline_access', 'admin'] } });
    const first = identity.authenticate(`Bearer ${token}`);
    assert.ok(first instanceof Promise, 'a new token is verified asynchronously');
    assert.equal(identity.authenticate(`Bearer ${token}`), first, 'once, however many requests carry it meanwhile');
    const principal: Principal = await first;
    assert.deepEqual({ ...principal, expiresAt: undefined }, { userId: 77n, admin: true, service: false, expiresAt: undefined });
    assert.ok(principal.expiresAt! > Date.now());
    const again = identity.authenticate(`Bearer ${token}`);
    assert.ok(!(again instanceof Promise), 'the same token again answers synchronously');
    assert.equal(again, principal);
    await refusal(async () => identity.authenticate(`Bearer ${await signToken(ed, { sub: '77', uid: 77 })}`));
    await refusal(async () => identity.authenticate(`Bearer ${await signToken(ed, { uid: '77', realm_access: { roles: [1] } })}`));
  });

  it('when a claim name holds dots itself (Auth0 namespaced claims), then that claim is read, not a path', async () => {
    const identity = await identityWith('sub', 'https://shop.test/roles');
    const service = await identity.authenticate(`Bearer ${await signToken(rsa, { sub: '5', 'https://shop.test/roles': 'service' })}`);
    assert.deepEqual({ ...service, expiresAt: undefined }, { userId: 5n, admin: false, service: true, expiresAt: undefined });
    const none = await identity.authenticate(`Bearer ${await signToken(rsa, { sub: '6', role: 'admin' })}`);
    assert.equal(none.admin, false, 'the default claim name no longer counts');
    // HS256 tokens keep sub and role, whatever the JWKS claims are.
    const hs = identity.authenticate(`Bearer ${await tokens.sign({ userId: 8n, admin: true }, 60)}`);
    assert.ok(!(hs instanceof Promise));
    assert.equal(hs.admin, true);
  });
});
