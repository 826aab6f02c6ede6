import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { dropDatabase } from '../../src/infra/db/database.js';
import { demoLinks } from '../../src/cli/demo-setup.js';
import { REDIS_URL, uniqueName, DATABASE_SERVER } from '../support/helpers.js';
import { deleteKeys } from '../../support/redis-keys.js';
import { runSeckill, startSeckill } from '../../support/processes.js';

/** The demo adds `_demo` / `-demo` to the database and prefix it is given: those are removed after the file. */
function demoData(label: string): Record<string, string> {
  const name = uniqueName(label);
  after(async () => {
    await dropDatabase(`${DATABASE_SERVER}/${name}_demo`);
    const redis = new Redis(REDIS_URL);
    await deleteKeys(redis, `${name}-demo:*`);
    redis.disconnect();
  });
  return { DATABASE_URL: `${DATABASE_SERVER}/${name}`, REDIS_PREFIX: name, JWT_SECRET: 'demo-secret' };
}

describe('seckill demo', () => {
  it('names the console and the store page of its voucher', () => {
    const links = demoLinks('http://127.0.0.1:3000', '42');
    assert.match(links, /http:\/\/127\.0\.0\.1:3000\/console/);
    assert.match(links, /http:\/\/127\.0\.0\.1:3000\/store\/42/);
  });

  it('prints the console and store URLs while the sale runs, passes, and with --keep stays up until SIGINT', async () => {
    const demo = startSeckill(['demo', '--stock', '5', '--buyers', '40', '--keep'], { env: demoData('demo') });
    after(() => demo.stop()); // when the test fails before its own SIGINT
    const [, url, voucherId] = await demo.line(/store\s+(http:\/\/127\.0\.0\.1:\d+)\/store\/(\d+)/);
    assert.ok(demo.lines.some((l) => l.includes(`${url}/console`)));
    // The sale is under way (or over): its store page and the console answer.
    assert.equal((await fetch(`${url}/store/${voucherId}`)).status, 200);
    await demo.line(new RegExp(`^PASS: no oversell.* in Redis and in ${DATABASE_SERVER.startsWith('postgres') ? 'PostgreSQL' : 'MariaDB'}\\.`), 90_000);
    await demo.line(/The service stays up at/);
    const consolePage = await fetch(`${url}/console`);
    assert.equal(consolePage.status, 200);
    assert.match(await consolePage.text(), /<html/i);
    const voucher = await fetch(`${url}/api/vouchers/${voucherId}`);
    assert.equal((await voucher.json()).stock, 5);
    assert.equal(await demo.stop('SIGINT'), 0, demo.lines.join('\n'));
  });
});

describe('seckill demo --queue', () => {
  it('runs a queued drop to its verdict: the draw admits the first places, cancelled units go to the next ones, the draw re-checks, exit 0', async () => {
    const { code, stdout, stderr } = await runSeckill(['demo', '--queue', '--stock', '10', '--buyers', '60'], { env: demoData('demo-queue'), timeoutMs: 120_000 });
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /^drawn at .*: 10 first places admitted$/m);
    assert.match(stdout, /^ok {3}I7 admitted in queue order, each place once$/m);
    assert.match(stdout, /^ok {3}the draw re-checked from what was published$/m);
    assert.match(stdout, /^PASS: every unit sold once, in the order of the draw/m);
  });
});
