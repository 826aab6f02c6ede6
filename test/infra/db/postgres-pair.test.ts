// A private PostgreSQL primary and its asynchronous standby (support/private-postgres.ts) through
// a failover: what the standby had replayed survives, what it had not received is lost, and the
// one URL leads to the new primary.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type PostgresPair, queryOnce, startPostgresPair } from '../../../support/private-postgres.js';

const insert = (url: string, rows: number) => queryOnce(url, 'INSERT INTO t SELECT generate_series(1, $1)', [rows]);
const count = async (url: string) => Number((await queryOnce(url, 'SELECT count(*) AS n FROM t')).rows[0].n);

describe('a PostgreSQL primary and its asynchronous standby', async () => {
  // Each test spends a pair (a failover is one-way): both start at once.
  const [first, second] = await Promise.all([startPostgresPair(), startPostgresPair()]);
  after(() => Promise.all([first.stop(), second.stop()]));

  /** A table with `rows` rows, replicated. */
  const seeded = async ({ url, caughtUp }: PostgresPair, rows: number) => {
    await queryOnce(url, 'CREATE TABLE t (n int)');
    await insert(url, rows);
    await caughtUp();
  };

  it('when the standby has caught up, then every row committed before the failover is on the new primary', async (t) => {
    await seeded(first, 100);
    const ms = await first.failover();
    t.diagnostic(`failover took ${Math.round(ms)} ms`);
    assert.equal(await count(first.url), 100);
  });

  it('when replication is paused, then the rows committed meanwhile are lost in the failover, and the URL leads to the new primary', async (t) => {
    await seeded(second, 100);
    second.pauseReplication();
    for (let i = 0; i < 5; i++) await insert(second.url, 10);
    assert.ok((await second.lagBytes()) > 0, 'the standby is behind');
    const ms = await second.failover();
    t.diagnostic(`failover took ${Math.round(ms)} ms`);
    assert.equal(await count(second.url), 100, 'the 50 rows committed during the pause are lost');
    await insert(second.url, 1);
    assert.equal(await count(second.url), 101);
  });
});
