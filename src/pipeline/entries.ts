// Stream entries as written by lib/admission.lua (admit-n.lua, restock-7.lua) and requeue-2.lua:
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

const DIGITS = /^\d{1,16}$/;

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
  // Digits only: Number() would read "" as 0 and "0x10" as 16.
  const quantity = DIGITS.test(values[3] ?? '') ? Number(values[3]) : NaN;
  const createdMs = DIGITS.test(values[4] ?? '') ? Number(values[4]) : NaN;
  if (values.length !== 5 || orderId === null || voucherId === null || userId === null || !Number.isSafeInteger(quantity) || quantity < 1 || !Number.isSafeInteger(createdMs)) {
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
