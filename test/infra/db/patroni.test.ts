// A Patroni cluster in synchronous mode behind HAProxy (support/patroni-cluster.ts): through a
// planned switchover and through the leader's crash, the one URL leads to the new leader, and
// every commit acknowledged before either is on it (a commit waits for the synchronous standby,
// the only member Patroni promotes).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startPatroniCluster } from '../../../support/patroni-cluster.js';
import { queryOnce } from '../../../support/private-postgres.js';

const insert = (url: string, rows: number) => queryOnce(url, 'INSERT INTO t SELECT generate_series(1, $1)', [rows]);
const count = async (url: string) => Number((await queryOnce(url, 'SELECT count(*) AS n FROM t')).rows[0].n);

// One cluster for the file (starting one takes seconds): the tests run in order, each on what the one before left.
describe('a Patroni cluster in synchronous mode behind HAProxy', async () => {
  const began = performance.now();
  const cluster = await startPatroniCluster({ synchronous: true });
  const startMs = performance.now() - began;
  after(() => cluster.stop());

  it('takes a table and rows through the URL', async (t) => {
    t.diagnostic(`start-up took ${Math.round(startMs)} ms`);
    await queryOnce(cluster.url, 'CREATE TABLE t (n int)');
    await insert(cluster.url, 100);
    assert.equal(await count(cluster.url), 100);
  });

  it('when switched over, then a write succeeds on the new leader and every row is there', async (t) => {
    const old = await cluster.leader();
    const ms = await cluster.switchover();
    t.diagnostic(`switchover: a write succeeded on the new leader after ${Math.round(ms)} ms`);
    assert.notEqual(await cluster.leader(), old);
    await insert(cluster.url, 10);
    assert.equal(await count(cluster.url), 110);
  });

  it('when the leader is killed, then a write succeeds on a new leader and no acknowledged commit is lost', async (t) => {
    // One commit each, up to the kill: every one acknowledged, so held by the synchronous standby.
    for (let i = 0; i < 20; i++) await insert(cluster.url, 1);
    const old = await cluster.leader();
    const ms = await cluster.killLeader();
    t.diagnostic(`leader killed: a write succeeded on a new leader after ${Math.round(ms)} ms`);
    assert.notEqual(await cluster.leader(), old);
    assert.equal(await count(cluster.url), 130);
    await insert(cluster.url, 1);
    assert.equal(await count(cluster.url), 131);
  });
});
