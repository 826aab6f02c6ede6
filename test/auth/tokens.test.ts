import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { createSigner } from 'fast-jwt';
import { createTokenService } from '../../src/auth/tokens.js';
import { AppError } from '../../src/errors.js';

const SECRET = 'test-secret-of-reasonable-length-0123456789';
const tokens = createTokenService(SECRET);
const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** A token with any header and payload, signed with `secret` as HS256 would sign it. */
const forge = (header: unknown, payload: unknown, secret = SECRET) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
};
const HS256 = { alg: 'HS256', typ: 'JWT' };

/** The message of the 401 that verify throws. */
function refusal(authorization: string | undefined): string {
  try {
    tokens.verify(authorization);
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
    assert.deepEqual(tokens.verify(`Bearer ${await tokens.sign({ userId: 9223372036854775807n, admin: true }, 0)}`), {
      userId: 9223372036854775807n,
      admin: true,
    });
    const exp = now() + 60;
    const signed = createSigner({ key: SECRET, algorithm: 'HS256' })({ sub: '7', nbf: now() - 5, exp });
    assert.deepEqual(tokens.verify(`Bearer ${signed}  `), { userId: 7n, admin: false, expiresAt: exp * 1000 });
    // The same header is parsed once and then recognised: a second, different token still verifies.
    assert.deepEqual(tokens.verify(`Bearer ${forge(HS256, { sub: '8' })}`), { userId: 8n, admin: false });
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
        refusal(`Bearer ${forge(HS256, sub === undefined ? {} : { sub })}`),
        'token subject must be a positive 64-bit decimal user id',
        `sub ${JSON.stringify(sub)}`,
      );
    }
  });
});
