// Redis' CPU per claim of admit-n.lua alone, in the two shapes bench/many-sales compares: 23 claims
// a call on one voucher, and 23 claims a call spread over 100 vouchers (~19 groups). One client,
// calls one after another, on a private redis-server: nothing but the script is measured, so a
// change to admit-n.lua can be weighed in a minute, without the server, the pipeline or the box's
// swings. `node --import tsx bench/many-sales/script-shapes.ts [--rounds 3] [--calls 1500]`
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import type { AdmitClaim, AdmitGroup } from '../../src/infra/redis/scripts/admission.js';
import { createKeySpace } from '../../src/infra/redis/keys.js';
import { createScripts } from '../../src/infra/redis/scripts/index.js';
import { redisCpuUs, startOwnRedis } from '../admission/own-redis.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, calls: { type: 'string', default: '1500' } } });
const rounds = Number(values.rounds);
const calls = Number(values.calls);
const CLAIMS_PER_CALL = 23; // one hot voucher's claims per call in bench/many-sales
const VOUCHERS = 100;
// The server's defaults: the buyer's token bucket on, the voucher's off; every claim keyed.
const limits = { voucher: { rate: 0, burst: 0 }, user: { rate: 5, burst: 10 } };

const own = await startOwnRedis('private');
const redis = new Redis(own.url);
const keys = createKeySpace('shapes', 16);
const { admitGroups } = createScripts(redis, keys);
const master = /master_replid:(\w+)/.exec(await redis.info('replication'))![1]!;

/** Every voucher live, verified on this master, with stock for the whole run. */
async function freshVouchers(): Promise<void> {
  await redis.flushall();
  const now = Date.now();
  for (let v = 1n; v <= BigInt(VOUCHERS); v++) {
    const state = { stock: 1e9, begin: now - 1_000, end: now + 3_600_000, limit: 5, expire: Math.floor(now / 1000) + 7_200, waitcap: 0, builtAt: '1', listAdditions: 0, inflight: 0, verifiedOn: master };
    await redis.hset(keys.voucher(v, keys.shardOf(v)), state);
  }
}

let next = 0;
const claim = (): AdmitClaim => {
  next += 1;
  return { userId: BigInt(next), orderId: BigInt(next), quantity: 1, idempotencyKey: `k${next}` };
};

function callOf(vouchers: number): AdmitGroup[] {
  const byVoucher = new Map<bigint, AdmitClaim[]>();
  for (let i = 0; i < CLAIMS_PER_CALL; i++) {
    const v = BigInt(1 + Math.floor(Math.random() * vouchers));
    byVoucher.set(v, [...(byVoucher.get(v) ?? []), claim()]);
  }
  return [...byVoucher].map(([voucherId, claims]) => ({ voucherId, shard: keys.shardOf(voucherId), claims, limits }));
}

/** Redis CPU µs per claim, and groups per call, over `calls` admit calls. */
async function measure(vouchers: number): Promise<{ us: number; groups: number }> {
  await freshVouchers();
  let groups = 0;
  const before = await redisCpuUs(redis);
  for (let c = 0; c < calls; c++) {
    const call = callOf(vouchers);
    groups += call.length;
    const answers = (await admitGroups(call)).flat();
    if (answers.some((a) => a.code !== 0)) throw new Error(`a claim was not admitted: ${JSON.stringify(answers.find((a) => a.code !== 0))}`);
    // The pipeline's part, left out: the entries and in-flight records go, so the keys stay small.
    if (c % 200 === 199) await redis.del(...Array.from({ length: keys.shards }, (_, s) => [keys.orders(s), keys.inflight(s)]).flat());
  }
  return { us: ((await redisCpuUs(redis)) - before) / (calls * CLAIMS_PER_CALL), groups: groups / calls };
}

try {
  console.log('| round | one voucher µs / claim | 100 vouchers µs / claim | groups per call | ratio |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  const ratios: number[] = [];
  for (let r = 1; r <= rounds; r++) {
    const one = await measure(1);
    const many = await measure(VOUCHERS);
    ratios.push(many.us / one.us);
    console.log(`| ${r} | ${one.us.toFixed(1)} | ${many.us.toFixed(1)} | ${many.groups.toFixed(1)} | ${(many.us / one.us).toFixed(2)} |`);
  }
  console.log(`\nmedian ratio ${ratios.sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!.toFixed(2)}`);
} finally {
  redis.disconnect();
  await own.stop();
}
