// A rejection that ioredis leaves with no holder, about a connection that is not usable, is logged
// and the process lives on; anything else unhandled is not taken for one.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { isStrayRedisRejection } from '../../../src/infra/redis/stray-rejections.js';
import { TYPESCRIPT } from '../../../support/processes.js';

/** The error ioredis gives a command sent while the stream is not writable, with its own stack. */
async function notWritableError(): Promise<Error> {
  const redis = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null });
  try {
    await redis.get('k');
  } catch (err) {
    return err as Error;
  } finally {
    redis.disconnect();
  }
  throw new Error('the command was not refused');
}

describe('stray Redis rejections', () => {
  it('when an ioredis command is refused for its connection, then it counts as stray; our own errors and other messages do not', async () => {
    const err = await notWritableError();
    assert.match(err.message, /Stream isn't writeable/);
    assert.equal(isStrayRedisRejection(err), true);
    assert.equal(isStrayRedisRejection(new Error("Stream isn't writeable and enableOfflineQueue options is false")), false, 'not raised by ioredis');
    assert.equal(isStrayRedisRejection(new Error('boom')), false);
    assert.equal(isStrayRedisRejection(new Error('MOVED 15356 127.0.0.1:21798')), false, 'a MOVED not raised by ioredis');
    assert.equal(isStrayRedisRejection('Connection is closed'), false);
  });

  it('when such a rejection has no handler, then it is logged and the process goes on; any other still ends the process', async () => {
    // In a process of its own: the test runner takes every unhandled rejection of its own process as a failure.
    const run = (reason: string) =>
      spawnSync(process.execPath, [...TYPESCRIPT, '--input-type=module', '-e', `
        import pino from 'pino';
        import { Redis } from 'ioredis';
        import { absorbStrayRedisRejections } from ${JSON.stringify(new URL('../../../src/infra/redis/stray-rejections.ts', import.meta.url).pathname)};
        absorbStrayRedisRejections(pino());
        const redis = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null });
        const err = await redis.get('k').catch((e) => e);
        void Promise.reject(${reason});
        setTimeout(() => console.log('still running'), 100);
      `], { encoding: 'utf8', timeout: 20_000 });
    const stray = run('err');
    assert.equal(stray.status, 0, stray.stderr);
    assert.match(stray.stdout, /no caller left/);
    assert.match(stray.stdout, /still running/);
    const other = run("new Error('a bug')");
    assert.notEqual(other.status, 0);
    assert.doesNotMatch(other.stdout, /still running/);
    assert.match(other.stderr, /a bug/);
  });

  it('when a test holds its clients to the same rule, then a stray rejection does not fail it and any other still does', () => {
    // A test file of its own, run by a runner of its own, outside test/ (the suite lists test/).
    const dir = mkdtempSync(join(tmpdir(), 'seckill-stray-'));
    const run = (reason: string) => {
      const file = join(dir, `stray-${Math.random().toString(36).slice(2)}.test.ts`);
      writeFileSync(file, `
        import { describe, it } from 'node:test';
        import { Redis } from ${JSON.stringify(createRequire(import.meta.url).resolve('ioredis'))};
        import { tolerateStrayRedisRejections } from ${JSON.stringify(new URL('../../support/stray-rejections.ts', import.meta.url).pathname)};
        describe('a file that kills masters', () => {
          tolerateStrayRedisRejections();
          it('meets a rejection nobody holds', async () => {
            const redis = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null });
            const err = await redis.get('k').catch((e) => e);
            void Promise.reject(${reason});
            await new Promise((r) => setTimeout(r, 100));
          });
        });
      `);
      // Without the runner's mark on the environment, the child runs as a runner of its own.
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      return spawnSync(process.execPath, [...TYPESCRIPT, '--test', file], { encoding: 'utf8', timeout: 30_000, env });
    };
    try {
      const stray = run('err');
      assert.equal(stray.status, 0, stray.stdout);
      const other = run("new Error('a bug')");
      assert.notEqual(other.status, 0, 'an unhandled rejection of our own fails the test');
      assert.match(other.stdout, /a bug/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
