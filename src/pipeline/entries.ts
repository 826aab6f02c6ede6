// Stream entries as written by admit-9.lua (or restock-7.lua, for a waitlist promotion): o=orderId v=voucherId u=userId q=quantity t=createdMs.
import { parseId } from '../ids/parse.js';
import type { OrderRef } from '../infra/redis/scripts.js';

export interface OrderEntry extends OrderRef {
  createdAt: Date;
  /** Times the group has delivered this entry (1 on first read). */
  deliveries: number;
}

export interface MalformedEntry {
  shard: number;
  streamId: string;
  reason: string;
}

export type RawEntry = [id: string, fields: string[]];

export function parseEntry(shard: number, [streamId, fields]: RawEntry, deliveries: number): OrderEntry | MalformedEntry {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  const orderId = parseId(f.o ?? '');
  const voucherId = parseId(f.v ?? '');
  const userId = parseId(f.u ?? '');
  const quantity = Number(f.q);
  const createdMs = Number(f.t);
  if (orderId === null || voucherId === null || userId === null || !Number.isInteger(quantity) || quantity < 1 || !Number.isFinite(createdMs)) {
    return { shard, streamId, reason: `malformed entry: ${JSON.stringify(f).slice(0, 200)}` };
  }
  return {
    shard,
    streamId,
    orderId: orderId.toString(),
    voucherId,
    userId: userId.toString(),
    quantity,
    createdAt: new Date(createdMs),
    deliveries,
  };
}

export function isMalformed(e: OrderEntry | MalformedEntry): e is MalformedEntry {
  return !('orderId' in e);
}
