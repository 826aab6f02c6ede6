import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, configTable, loadConfig, settings } from '../src/config.js';
import { derivedConfirmTimeoutMs } from '../src/events/amqp-publisher.js';

describe('configuration', () => {
  it('gives every setting a working default', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.redisUrl, 'redis://127.0.0.1:6379');
    assert.equal(config.databaseUrl, 'mysql://root@127.0.0.1:3306/seckill');
    assert.equal(config.redisPrefix, 'sk');
    assert.equal(config.shards, 16);
  });

  it('reads values from the environment', () => {
    const config = loadConfig({ PORT: '8080', SHARDS: '8', REDIS_PREFIX: 'prod' });
    assert.equal(config.port, 8080);
    assert.equal(config.shards, 8);
    assert.equal(config.redisPrefix, 'prod');
  });

  for (const [env, value] of [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['SHARDS', '0'],
    ['REDIS_URL', 'http://localhost'],
    ['DATABASE_URL', 'not a url'],
    ['LOG_LEVEL', 'loud'],
    ['REDIS_PREFIX', 'has space'],
    ['EVENTS_AMQP_URL', 'http://127.0.0.1:5672'],
    ['EVENTS_EXCHANGE', 'has space'],
    ['EVENTS_POLL_MS', '0'],
    ['EVENTS_CONFIRM_TIMEOUT_MS', '10'],
    ['CORS_ORIGINS', 'shop.example.com'],
    ['CORS_ORIGINS', 'https://shop.example.com/path'],
  ] as const) {
    it(`rejects ${env}=${value} with a one-line message naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [env]: value }),
        (err: Error) => err instanceof ConfigError && err.message.startsWith(`invalid ${env}:`) && !err.message.includes('\n'),
      );
    });
  }

  it('leaves order events off unless EVENTS_AMQP_URL is set', () => {
    assert.equal(loadConfig({}).eventsAmqpUrl, '');
    assert.equal(loadConfig({}).eventsExchange, 'seckill.orders');
    assert.equal(loadConfig({ EVENTS_AMQP_URL: 'amqps://u:p@mq.example:5671/shop' }).eventsAmqpUrl, 'amqps://u:p@mq.example:5671/shop');
  });

  it('gives the broker longer to confirm a relay round when EVENTS_BATCH is larger, unless EVENTS_CONFIRM_TIMEOUT_MS says', () => {
    assert.equal(loadConfig({}).eventsConfirmTimeoutMs, null);
    assert.equal(derivedConfirmTimeoutMs(loadConfig({}).eventsBatch), 9_000);
    assert.equal(derivedConfirmTimeoutMs(loadConfig({ EVENTS_BATCH: '10000' }).eventsBatch), 25_000);
    assert.equal(loadConfig({ EVENTS_CONFIRM_TIMEOUT_MS: '60000' }).eventsConfirmTimeoutMs, 60_000);
  });

  it('documents every setting in the markdown table', () => {
    const table = configTable();
    for (const s of Object.values(settings)) assert.match(table, new RegExp(`\`${s.env}\``));
  });
});
