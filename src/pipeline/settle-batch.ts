// What a lane tells Redis once the database has decided a batch: acknowledge each decided entry,
// clear its in-flight record and compensate the orders that failed (the settle script, one call
// per shard), then count, log and announce what this call settled. A malformed entry, which no
// database decides, is acknowledged and moved to the dead letters.
import { DEAD_LETTER_MAX_LEN, type SettleInput } from '../infra/redis/scripts/settle.js';
import type { MalformedEntry, OrderEntry } from '../infra/redis/records.js';
import type { OrderEvent } from '../orders/order-pubsub.js';
import type { PipelineDeps } from './pipeline-deps.js';
import { CONSUMER_GROUP } from './maintenance.js';
import { type Settlement, settleInput } from './settlement.js';

/** One settle script call per shard for the whole batch; an entry not in `decided` stays pending. */
export async function settleBatch(
  { scripts, events, log }: Pick<PipelineDeps, 'scripts' | 'events' | 'log'>,
  entries: OrderEntry[],
  decided: Map<string, Settlement>,
): Promise<void> {
  const byShard = new Map<number, SettleInput[]>();
  for (const e of entries) {
    const outcome = decided.get(e.orderId);
    if (!outcome) continue;
    const input = settleInput(e, outcome);
    const list = byShard.get(e.shard);
    if (list) list.push(input);
    else byShard.set(e.shard, [input]);
  }
  let stored = 0;
  const announce = events?.announce?.wanted() ? events.announce : undefined;
  const announced: Omit<OrderEvent, 'at'>[] = [];
  for (const [shard, inputs] of byShard) {
    const settled = await scripts.settle(CONSUMER_GROUP, shard, inputs);
    inputs.forEach((input, i) => {
      if (!settled[i]) return; // settled before (redelivery): counted then
      if (announce) {
        const status = input.failureReason ? 'failed' : 'pending_payment';
        const { orderId, userId, quantity } = input;
        announced.push({ type: input.failureReason ? 'failed' : 'stored', status, orderId, voucherId: input.voucherId.toString(), userId, quantity });
      }
      if (!input.failureReason) stored += 1;
      else {
        events?.failed?.(input.failureReason.split(':')[0]!);
        log.warn({ orderId: input.orderId, reason: input.failureReason }, 'order failed; Redis compensated');
      }
    });
  }
  if (stored) events?.stored?.(stored);
  if (announce && announced.length) void announce.publish(announced);
}

export async function deadLetter({ redis, keys, log }: Pick<PipelineDeps, 'redis' | 'keys' | 'log'>, e: MalformedEntry): Promise<void> {
  log.error({ streamId: e.streamId, reason: e.reason }, 'malformed stream entry moved to dead letters');
  const acked = await redis.xack(keys.orders(e.shard), CONSUMER_GROUP, e.streamId);
  if (acked === 1) {
    await redis.xadd(keys.deadLetters(e.shard), 'MAXLEN', '~', DEAD_LETTER_MAX_LEN, '*', 'entry', e.streamId, 'reason', e.reason);
  }
}
