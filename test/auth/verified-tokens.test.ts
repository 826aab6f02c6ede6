import assert from 'node:assert/strict';
import { it } from 'node:test';
import { VerifiedTokens } from '../../src/auth/verified-tokens.js';

const principal = (userId: bigint, expiresAt?: number) => ({ userId, admin: false, service: false, ...(expiresAt === undefined ? {} : { expiresAt }) });

it('when full, then a token used since it was remembered stays and one never used again goes', () => {
  const now = 1_000;
  const cache = new VerifiedTokens(3);
  cache.add('a', principal(1n, 9_000), now);
  cache.add('b', principal(2n, 9_000), now);
  cache.add('c', principal(3n, 9_000), now);
  assert.equal(cache.get('a', now)?.userId, 1n); // a buyer sending again
  cache.add('d', principal(4n, 9_000), now);
  assert.equal(cache.size, 3);
  assert.equal(cache.get('b', now), undefined, 'the oldest unused entry went');
  assert.deepEqual(['a', 'c', 'd'].map((token) => cache.get(token, now)?.userId), [1n, 3n, 4n]);
  // Every entry used: one still goes, the cap holds.
  cache.add('e', principal(5n, 9_000), now);
  assert.equal(cache.size, 3);
});

it('when a token reaches its exp, then it is no longer answered, and a token one byte apart never is', () => {
  const cache = new VerifiedTokens(10);
  cache.add('header.payload.signature', principal(1n, 5_000), 1_000);
  assert.equal(cache.get('header.payload.signature', 5_000)?.userId, 1n);
  assert.equal(cache.get('header.payload.signaturE', 1_000), undefined);
  assert.equal(cache.get('header.payload.signature', 5_001), undefined);
  assert.equal(cache.size, 0, 'dropped when found expired');
  cache.add('no-exp', principal(2n), 1_000);
  assert.equal(cache.get('no-exp', Number.MAX_SAFE_INTEGER)?.userId, 2n);
  assert.ok(Object.isFrozen(cache.get('no-exp', 1_000)), 'one principal object is shared by every request of the token');
});
