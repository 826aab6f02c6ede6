// GET /readyz is public: when a store is down it says which one and since when, never the
// driver's message (hosts, ports, users); that message goes to the log, once per change of state.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { createDb } from '../../src/infra/db/database.js';
import { PROBE_DEADLINE_MS, readinessCheck } from '../../src/readiness.js';
import { DATABASE_PORT, startTestApp, suiteScope } from '../support/helpers.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

/** The probe's own deadline is the product's promise; this much more is the test machine's load. */
const ANSWER_MARGIN_MS = 700;

const t = await startTestApp(suiteScope(), 'readiness');
const databaseUrl = new URL(t.env.DATABASE_URL!);

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The app of the test file, asking a database at `url` for its readiness, with its log lines kept. */
async function appWithDatabase(url: URL) {
  const lines: Record<string, any>[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
  const db = createDb(url.toString(), 2);
  const app = await buildApp({ ...t.c.appDeps, logger: log, readiness: readinessCheck({ redisWatch: t.c.redisWatch, db }) });
  after(async () => {
    await app.close();
    await db.destroy();
  });
  const probe = async () => {
    const started = performance.now();
    const res = await app.inject({ url: '/readyz' });
    return { res, ms: performance.now() - started };
  };
  const warnings = () => lines.filter((l) => l.level === 40);
  return { probe, warnings };
}

/** The answer names no host, port, user or driver text: only the contract's fields. */
function assertLeaksNothing(body: Record<string, any>, secrets: string[]) {
  const text = JSON.stringify(body);
  for (const secret of [...secrets, '127.0.0.1', 'localhost', 'ECONNREFUSED', 'denied', 'password', 'role', 'error']) {
    assert.ok(!text.toLowerCase().includes(secret.toLowerCase()), `/readyz shows ${secret}: ${text}`);
  }
  assert.deepEqual(Object.keys(body).sort(), ['code', 'database', 'message', 'redis', 'status']);
  assert.deepEqual(Object.keys(body.database).sort(), ['downSince', 'latencyMs', 'state']);
  assert.deepEqual(Object.keys(body.redis).sort(), ['dataLosses', 'latencyMs', 'state']);
}

describe('GET /readyz leaks nothing', () => {
  it('when the database refuses the connection, or the login, then 503 names the database down since an ISO time, and the reason goes to the log once', async () => {
    const port = await closedPort();
    const refused = new URL(databaseUrl);
    refused.port = String(port);
    const unknownUser = new URL(databaseUrl);
    unknownUser.username = 'seckill_no_such_user';
    unknownUser.password = 'not-the-password';
    for (const [url, driverSays] of [
      [refused, /ECONNREFUSED/],
      [unknownUser, /seckill_no_such_user/],
    ] as const) {
      const { probe, warnings } = await appWithDatabase(url);
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await probe());
      const since = answers[0]!.res.json().database.downSince;
      for (const { res, ms } of answers) {
        assert.equal(res.statusCode, 503);
        assert.ok(ms < PROBE_DEADLINE_MS + ANSWER_MARGIN_MS, `answered in ${ms.toFixed(0)} ms`);
        const body = res.json();
        assert.equal(body.code, 'UNAVAILABLE');
        assert.equal(body.message, 'not ready: the database unreachable');
        assert.equal(body.status, 'unavailable');
        assert.equal(body.database.state, 'down');
        assert.equal(body.database.downSince, since, 'since the first probe that saw it down');
        assert.notEqual(body.redis.state, 'down');
        assertLeaksNothing(body, [String(port), String(DATABASE_PORT), url.username, 'Access']);
      }
      assert.equal(new Date(since).toISOString(), since);
      const logged = warnings();
      assert.equal(logged.length, 1, `one warning for three probes: ${JSON.stringify(logged)}`);
      assert.equal(logged[0]!.dependency, 'database');
      assert.match(logged[0]!.reason, driverSays);
    }
  });

  it('when the database is cut, hangs and comes back, then /readyz turns 503 within its deadline, keeps the first time it saw it down, and is 200 again; the log has one line per change', async () => {
    const proxy = new TcpProxy('127.0.0.1', DATABASE_PORT);
    const port = await proxy.start();
    after(() => proxy.stop());
    const viaProxy = new URL(databaseUrl);
    viaProxy.port = String(port);
    const { probe, warnings } = await appWithDatabase(viaProxy);
    const ready = await probe();
    assert.equal(ready.res.statusCode, 200, ready.res.body);
    assert.equal(ready.res.json().database.downSince, undefined);

    proxy.stall(); // the database holds every byte: the probe's deadline answers
    const silent = await probe();
    assert.equal(silent.res.statusCode, 503);
    assert.ok(silent.ms < PROBE_DEADLINE_MS + ANSWER_MARGIN_MS, `answered in ${silent.ms.toFixed(0)} ms`);
    const since = silent.res.json().database.downSince;
    assertLeaksNothing(silent.res.json(), [String(port), String(DATABASE_PORT), databaseUrl.username]);
    proxy.resume();
    await proxy.cut();
    const cut = await probe();
    assert.equal(cut.res.statusCode, 503);
    assert.equal(cut.res.json().database.downSince, since, 'still the same outage');
    assertLeaksNothing(cut.res.json(), [String(port), String(DATABASE_PORT), databaseUrl.username]);

    await proxy.restore();
    const back = await probe();
    assert.equal(back.res.statusCode, 200, back.res.body);
    assert.equal(back.res.json().database.downSince, undefined);
    const logged = warnings();
    assert.deepEqual(logged.map((l) => l.msg), ['the database is down: /readyz answers 503 until it answers again', 'the database answers again']);
    assert.match(logged[0]!.reason, /no answer within 800 ms/);
    assert.equal(logged[1]!.downSince, since);
  });
});
