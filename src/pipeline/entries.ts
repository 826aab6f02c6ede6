// Stream entries as written by lib/admission.lua (admit-9.lua, restock-7.lua) and requeue-2.lua:
// one field d = "orderId|voucherId|userId|quantity|createdMs". Entries written before that format
// (five fields o v u q t) may still be in a stream after an upgrade and are read as well.
import { idText, parseId } from '../ids/parse.js';
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

/** [orderId, voucherId, userId, quantity, createdMs] of either format (missing ones undefined). */
function entryValues(fields: string[]): (string | undefined)[] {
  if (fields.length === 2 && fields[0] === 'd') return fields[1]!.split('|');
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  return [f.o, f.v, f.u, f.q, f.t];
}

export function parseEntry(shard: number, [streamId, fields]: RawEntry, deliveries: number): OrderEntry | MalformedEntry {
  const values = entryValues(fields);
  const orderId = idText(values[0] ?? '');
  const voucherId = parseId(values[1] ?? '');
  const userId = idText(values[2] ?? '');
  const quantity = Number(values[3]);
  const createdMs = Number(values[4]);
  if (values.length !== 5 || orderId === null || voucherId === null || userId === null || !Number.isInteger(quantity) || quantity < 1 || !Number.isFinite(createdMs)) {
    return { shard, streamId, reason: `malformed entry: ${JSON.stringify(fields).slice(0, 200)}` };
  }
  return {
    shard,
    streamId,
    orderId,
    voucherId,
    userId,
    quantity,
    createdAt: new Date(createdMs),
    deliveries,
  };
}

export function isMalformed(e: OrderEntry | MalformedEntry): e is MalformedEntry {
  return !('orderId' in e);
}
