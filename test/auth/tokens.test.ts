import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { createSigner } from 'fast-jwt';
import { CLOCK_SKEW_SECONDS, createTokenService, ttlWithin } from '../../src/auth/tokens.js';
import { AppError } from '../../src/errors.js';

const SECRET = 'test-secret-of-reasonable-length-0123456789';
const MAX_TTL = 3600;
const tokens = createTokenService(SECRET, { maxTtlSeconds: MAX_TTL });
/** JWT_MAX_TTL_SECONDS=0: tokens without exp accepted. */
const unbounded = createTokenService(SECRET, { maxTtlSeconds: 0 });
const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** A token with any header and payload, signed with `secret` as HS256 would sign it. */
const forge = (header: unknown, payload: unknown, secret = SECRET) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
};
const HS256 = { alg: 'HS256', typ: 'JWT' };

/** The message of the 401 that verify throws. */
function refusal(authorization: string | undefined, service = tokens): string {
  try {
    service.verify(authorization);
  } catch (err) {
    assert.ok(err instanceof AppError);
    assert.equal(err.code, 'UNAUTHORIZED');
    return err.message;
  }
  assert.fail('the token was accepted');
}

describe('HS256 token verification', () => {
  it('accepts a token it signed, and a fast-jwt token with nbf and exp, with the user id and role', async () => {
    const inAMinute = tokens.verify(`Bearer ${await tokens.sign({ userId: 42n, admin: false }, 60)}`);
    assert.equal(inAMinute.userId, 42n);
    assert.ok(Math.abs(inAMinute.expiresAt! - (Date.now() + 60_000)) < 2_000);
    const largest = tokens.verify(`Bearer ${await tokens.sign({ userId: 9223372036854775807n, admin: true }, MAX_TTL)}`);
    assert.deepEqual({ ...largest, expiresAt: undefined }, { userId: 9223372036854775807n, admin: true, service: false, expiresAt: undefined });
    const exp = now() + 60;
    const signed = createSigner({ key: SECRET, algorithm: 'HS256' })({ sub: '7', nbf: now() - 5, exp });
    assert.deepEqual(tokens.verify(`Bearer ${signed}  `), { userId: 7n, admin: false, service: false, expiresAt: exp * 1000 });
    // The same header is parsed once and then recognised: a second, different token still verifies.
    assert.deepEqual(tokens.verify(`Bearer ${forge(HS256, { sub: '8', exp })}`), { userId: 8n, admin: false, service: false, expiresAt: exp * 1000 });
  });

  it('when the signature is wrong, missing or made with another secret, then it is refused', async () => {
    const good = await tokens.sign({ userId: 5n, admin: true }, 60);
    const [header, payload, signature] = good.split('.') as [string, string, string];
    const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1);
    assert.equal(refusal(`Bearer ${header}.${payload}.${flipped}`), 'invalid token');
    assert.equal(refusal(`Bearer ${header}.${payload}.`), 'invalid token');
    assert.equal(refusal(`Bearer ${header}.${payload}.${signature.slice(0, 20)}`), 'invalid token');
    assert.equal(refusal(`Bearer ${header}.${b64({ sub: '5', role: 'admin', exp: now() + 9999 })}.${signature}`), 'invalid token');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5' }, 'another-secret')}`), 'invalid token');
  });

  it('when the header names alg none, another algorithm or a crit extension, then it is refused even if signed', () => {
    assert.equal(refusal(`Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: '5' })}.`), 'invalid token');
    for (const alg of ['none', 'HS384', 'HS512', 'RS256', 'hs256', ['HS256']]) {
      assert.equal(refusal(`Bearer ${forge({ alg, typ: 'JWT' }, { sub: '5' })}`), 'invalid token', `alg ${JSON.stringify(alg)}`);
    }
    assert.equal(refusal(`Bearer ${forge({ typ: 'JWT' }, { sub: '5' })}`), 'invalid token');
    assert.equal(refusal(`Bearer ${forge({ ...HS256, crit: ['exp'] }, { sub: '5' })}`), 'invalid token');
  });

  it('when exp has passed, then it says the token expired; an nbf in the future or non-numeric times are invalid', async () => {
    assert.equal(refusal(`Bearer ${await tokens.sign({ userId: 5n, admin: false }, -10)}`), 'token expired');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: now() - 1 })}`), 'token expired');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', nbf: now() + 60 })}`), 'invalid token');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: String(now() + 60) })}`), 'invalid token');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: null })}`), 'invalid token');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', nbf: 'soon' })}`), 'invalid token');
    // A forged, expired token is invalid, not "expired": the signature is checked first.
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: now() - 1 }, 'another-secret')}`), 'invalid token');
  });

  it('when a token has no exp, then it is refused, unless the maximum lifetime is 0', async () => {
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5' })}`), 'token has no expiry (exp)');
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', role: 'admin', iat: now() })}`), 'token has no expiry (exp)');
    assert.deepEqual(unbounded.verify(`Bearer ${forge(HS256, { sub: '5' })}`), { userId: 5n, admin: false, service: false });
    assert.deepEqual(unbounded.verify(`Bearer ${await unbounded.sign({ userId: 6n, admin: true, service: false }, 0)}`), { userId: 6n, admin: true, service: false });
    // Still checked for what it says: a passed exp is expired there too.
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: now() - 1 })}`, unbounded), 'token expired');
  });

  it(`when exp lies further ahead than the maximum lifetime plus ${CLOCK_SKEW_SECONDS} s of clock skew, then it is refused`, () => {
    const tooLong = `token lifetime exceeds the maximum of ${MAX_TTL} s`;
    assert.deepEqual(tokens.verify(`Bearer ${forge(HS256, { sub: '5', exp: now() + MAX_TTL + CLOCK_SKEW_SECONDS - 1 })}`).userId, 5n);
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: now() + MAX_TTL + CLOCK_SKEW_SECONDS + 2 })}`), tooLong);
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: 1e300 })}`), tooLong);
    assert.equal(unbounded.verify(`Bearer ${forge(HS256, { sub: '5', exp: now() + 10 * 365 * 86400 })}`).userId, 5n);
    // Its default is JWT_MAX_TTL_SECONDS': a day.
    assert.equal(refusal(`Bearer ${forge(HS256, { sub: '5', exp: now() + 86400 + CLOCK_SKEW_SECONDS + 2 })}`, createTokenService(SECRET)), 'token lifetime exceeds the maximum of 86400 s');
  });

  it('when asked to sign a token that would not expire, or live longer than the maximum, then sign throws', async () => {
    const user = { userId: 5n, admin: false };
    await assert.rejects(tokens.sign(user, 0), /^Error: ttl 0 means no expiry, allowed only when JWT_MAX_TTL_SECONDS is 0 \(it is 3600\)$/);
    await assert.rejects(tokens.sign(user, MAX_TTL + 1), /^Error: ttl 3601 is longer than JWT_MAX_TTL_SECONDS \(3600 s\)$/);
    await assert.rejects(createTokenService(SECRET).sign(user, 0), /JWT_MAX_TTL_SECONDS is 0 \(it is 86400\)/);
    assert.equal(tokens.verify(`Bearer ${await tokens.sign(user, 1)}`).userId, 5n);
    assert.equal(unbounded.verify(`Bearer ${await unbounded.sign(user, 10 * 365 * 86400)}`).userId, 5n);
  });

  it('shortens a wanted lifetime to the maximum, unless the maximum is 0', () => {
    assert.equal(ttlWithin(3600, 86400), 3600);
    assert.equal(ttlWithin(3600, 600), 600);
    assert.equal(ttlWithin(3600, 0), 3600);
  });

  it('when the token is malformed, then it is refused', () => {
    assert.equal(refusal(undefined), 'missing bearer token');
    assert.equal(refusal('Basic dXNlcjpwYXNz'), 'missing bearer token');
    const good = forge(HS256, { sub: '5' });
    const [header, payload, signature] = good.split('.') as [string, string, string];
    for (const token of [
      '',
      'abc',
      'abc.def',
      'abc.def.ghi',
      `${header}.${payload}`,
      `.${payload}.${signature}`,
      `${header}..${signature}`,
      `${header}.${payload}.${signature}.${signature}`,
      `${header}=.${payload}.${signature}`,
      `${header}.${payload}.${signature}=`,
      `${header}.${payload}.${signature.slice(0, 10)}+${signature.slice(11)}`,
      forge(HS256, 'not json'),
      forge(HS256, [1, 2]),
      forge(HS256, null),
      forge('not json', { sub: '5' }),
      forge([HS256], { sub: '5' }),
    ]) {
      assert.equal(refusal(`Bearer ${token}`), 'invalid token', token);
    }
  });

  it('when sub is not a positive 64-bit decimal user id, then it is refused', () => {
    for (const sub of [undefined, 5, '0', '-5', '05', '5.0', ' 5', 'abc', '9223372036854775808', '99999999999999999999']) {
      assert.equal(
        refusal(`Bearer ${forge(HS256, { ...(sub === undefined ? {} : { sub }), exp: now() + 60 })}`),
        'token subject must be a positive 64-bit decimal user id',
        `sub ${JSON.stringify(sub)}`,
      );
    }
  });
});
