// The lazy subscriber on a Redis of the test's own (its ACL makes SUBSCRIBE fail on purpose):
// no connection before the first caller, one for all of them, a failed SUBSCRIBE forgotten.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { lazySubscriber } from '../../../src/infra/redis/lazy-subscriber.js';
import { startPrivateRedis } from '../../../support/private-redis.js';
import { waitFor } from '../../../support/wait.js';

const server = await startPrivateRedis();
const admin = new Redis(server.url);
after(async () => {
  admin.disconnect();
  await server.stop();
});
const log = pino({ level: 'silent' });

/** Connections named `name` on the server now. */
async function connectionsNamed(name: string): Promise<number> {
  const list = (await admin.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
}

/** A shared client logged in as `user`, and a subscriber of `channel` that keeps what it hears. */
function subscriberOf(user: string, channel: string) {
  const redis = new Redis(server.url, { username: user, password: 'pw' });
  after(() => redis.disconnect());
  const heard: string[] = [];
  const subscriber = lazySubscriber({ redis, log, channel, connectionName: `${user}-sub`, onMessage: (m) => heard.push(m) });
  after(() => subscriber.close());
  return { subscriber, heard, name: `${user}-sub` };
}

describe('lazySubscriber', () => {
  it('when nobody asked, then no connection is open; when many ask, then one connection hears the channel for all', async () => {
    await admin.acl('SETUSER', 'everyone', 'on', '>pw', '~*', '&*', '+@all');
    const { subscriber, heard, name } = subscriberOf('everyone', 'news');
    await admin.ping();
    assert.equal(await connectionsNamed(name), 0);
    assert.equal(subscriber.subscribed, false);

    await Promise.all([subscriber.subscribe(), subscriber.subscribe(), subscriber.subscribe()]);
    assert.equal(subscriber.subscribed, true);
    assert.equal(await connectionsNamed(name), 1);
    await subscriber.subscribe();
    assert.equal(await connectionsNamed(name), 1);

    await admin.publish('news', 'first');
    await admin.publish('elsewhere', 'not this');
    await waitFor('the message', () => heard.length === 1);
    assert.deepEqual(heard, ['first']);
  });

  it('when SUBSCRIBE fails, then its connection is dropped and the next caller subscribes again', async () => {
    // No channel permission: SUBSCRIBE answers NOPERM.
    await admin.acl('SETUSER', 'denied', 'on', '>pw', '~*', 'resetchannels', '+@all');
    const { subscriber, heard, name } = subscriberOf('denied', 'news');
    await assert.rejects(subscriber.subscribe(), /NOPERM/);
    assert.equal(subscriber.subscribed, false);
    await waitFor('the failed connection to be dropped', async () => (await connectionsNamed(name)) === 0, 5_000);

    await admin.acl('SETUSER', 'denied', '&*');
    await subscriber.subscribe();
    assert.equal(subscriber.subscribed, true);
    assert.equal(await connectionsNamed(name), 1);
    await admin.publish('news', 'now heard');
    await waitFor('the message', () => heard.length === 1);
  });

  it('when closed, then its connection ends and it never opens another', async () => {
    await admin.acl('SETUSER', 'closing', 'on', '>pw', '~*', '&*', '+@all');
    const { subscriber, name } = subscriberOf('closing', 'news');
    await subscriber.subscribe();
    await subscriber.close();
    assert.equal(subscriber.subscribed, false);
    await waitFor('the connection to end', async () => (await connectionsNamed(name)) === 0, 5_000);
    await assert.rejects(subscriber.subscribe(), /closed/);
    assert.equal(await connectionsNamed(name), 0);
  });
});
