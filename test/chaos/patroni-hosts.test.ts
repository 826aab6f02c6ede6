// A Patroni cluster in synchronous mode with each member on a test host of its own
// (bench/chaos/patroni-hosts.ts): the leader cut from its peers and from etcd, HAProxy still
// reaching it. A new leader takes writes once the old one's leader key expires, every commit
// acknowledged before the cut is on it (a commit waits for the synchronous standby, the only
// member Patroni promotes). What the heal does is the fault campaign's to measure
// (db-primary-partition): Patroni 3.0.2 may hand the key back to the old leader.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startPatroniOnHosts } from '../../bench/chaos/patroni-hosts.js';
import { queryOnce } from '../../support/private-postgres.js';

const insert = (url: string) => queryOnce(url, 'INSERT INTO t VALUES (1)');
const count = async (url: string) => Number((await queryOnce(url, 'SELECT count(*) AS n FROM t')).rows[0].n);

describe('a Patroni cluster on test hosts, its leader partitioned from its peers and from etcd', async () => {
  const began = performance.now();
  const cluster = await startPatroniOnHosts({ synchronous: true });
  const startMs = performance.now() - began;
  after(() => cluster.stop());

  it('when the leader is cut off, then a write succeeds on a new leader and every acknowledged row is there', async (t) => {
    t.diagnostic(`start-up took ${Math.round(startMs)} ms`);
    await queryOnce(cluster.url, 'CREATE TABLE t (n int)');
    // One commit each, up to the cut: every one acknowledged, so held by the synchronous standby.
    for (let i = 0; i < 20; i++) await insert(cluster.url);
    const old = await cluster.leader();
    const ms = await cluster.partitionLeader();
    t.diagnostic(`leader ${old} cut off: a write succeeded on a new leader after ${Math.round(ms)} ms`);
    assert.notEqual(await cluster.leader(), old);
    await insert(cluster.url);
    assert.equal(await count(cluster.url), 21);
  });
});
