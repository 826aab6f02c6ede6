// A private three-node Galera cluster (support/galera-cluster.ts) behind one writer address:
// through a planned switchover and through the writer's crash, every row committed before is
// still there, and the one URL takes writes again.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createConnection } from 'mysql2/promise';
import { startGaleraCluster } from '../../../support/galera-cluster.js';

/** One statement on a connection of its own: across a failover, each one reconnects. */
async function query(url: string, sql: string): Promise<unknown> {
  const conn = await createConnection({ uri: url, connectTimeout: 5_000 });
  try {
    return (await conn.query(sql))[0];
  } finally {
    await conn.end();
  }
}

const insert = (url: string, from: number, count: number) =>
  query(url, `INSERT INTO sale.orders (n) VALUES ${Array.from({ length: count }, (_, i) => `(${from + i})`).join(', ')}`);
const count = async (url: string) => Number(((await query(url, 'SELECT count(*) AS n FROM sale.orders')) as [{ n: number }])[0].n);

describe('a three-node Galera cluster behind one writer address', async () => {
  const began = performance.now();
  const cluster = await startGaleraCluster();
  after(() => cluster.stop());
  const startup = performance.now() - began;

  it('when it starts, then a database and a table created through the URL take rows', async (t) => {
    t.diagnostic(`start-up took ${Math.round(startup)} ms`);
    await query(cluster.url, 'CREATE DATABASE sale');
    await query(cluster.url, 'CREATE TABLE sale.orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL)');
    await insert(cluster.url, 1, 100);
    assert.equal(await count(cluster.url), 100);
  });

  it('when the writer is switched over, then a write through the URL succeeds on another node and every row is there', async (t) => {
    const old = cluster.writer();
    const ms = await cluster.switchover();
    t.diagnostic(`switchover: a write succeeded after ${Math.round(ms)} ms`);
    assert.notEqual(cluster.writer(), old);
    await insert(cluster.url, 101, 100);
    assert.equal(await count(cluster.url), 200);
  });

  it('when the writer is killed, then a write through the URL succeeds on a survivor and every row committed before is there', async (t) => {
    const old = cluster.writer();
    const ms = await cluster.killWriter();
    t.diagnostic(`kill: a write succeeded after ${Math.round(ms)} ms`);
    assert.notEqual(cluster.writer(), old);
    assert.equal(await count(cluster.url), 200);
    await insert(cluster.url, 201, 100);
    assert.equal(await count(cluster.url), 300);
  });
});
