// The order of a queue voucher's draw, from the seed and the entrants alone: each entrant's rank
// is HMAC-SHA256(seed, userId) and the places follow the ranks, lowest first. Nothing else goes
// in (not when a buyer joined, not in which order Redis lists them), so anyone holding the
// published seed and entrant list recomputes the same order (`seckill draw verify`), and a buyer
// who joined early or in the last millisecond has the same chance of every place.
import { createHmac, hash } from 'node:crypto';

const BLOCK = 64;
/** Longest decimal user id (a positive 64-bit integer). */
const MAX_ID_DIGITS = 20;

/** An entrant's rank, HMAC-SHA256 keyed by the seed's bytes over the decimal user id (hex), as anyone computes it. */
export const rankOf = (seedHex: string, userId: string): string => createHmac('sha256', Buffer.from(seedHex, 'hex')).update(userId).digest('hex');

/**
 * The same HMAC (RFC 2104) for many ids under one key, with the padded keys made once and two
 * one-shot hashes per id: a third of createHmac's cost, which makes a new object per id (100,000
 * ranks: 175 ms instead of 580 ms). The test compares it with rankOf.
 */
export function ranker(seedHex: string): (userId: string) => string {
  const key = Buffer.from(seedHex, 'hex');
  if (key.length > BLOCK) throw new RangeError('a seed longer than a SHA-256 block');
  const inner = Buffer.alloc(BLOCK + MAX_ID_DIGITS);
  const outer = Buffer.alloc(BLOCK + 32);
  for (let i = 0; i < BLOCK; i++) {
    inner[i] = (key[i] ?? 0) ^ 0x36;
    outer[i] = (key[i] ?? 0) ^ 0x5c;
  }
  return (userId) => {
    const n = inner.write(userId, BLOCK, 'latin1');
    hash('sha256', inner.subarray(0, BLOCK + n), 'buffer').copy(outer, BLOCK);
    return hash('sha256', outer, 'hex');
  };
}

/** An entrant with its rank, and the rank's first 48 bits as a number (compared first: fast). */
export interface Ranked {
  userId: string;
  rank: string;
  head: number;
}

const byRank = (a: Ranked, b: Ranked) => a.head - b.head || (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0);

/** The entrants ranked and sorted, place 1 first. */
export function rankAll(seedHex: string, userIds: readonly string[]): Ranked[] {
  const rank = ranker(seedHex);
  const ranked = userIds.map((userId) => {
    const r = rank(userId);
    return { userId, rank: r, head: parseInt(r.slice(0, 12), 16) };
  });
  return ranked.sort(byRank);
}

/** Two sorted rankings as one (the entrants ranked before the start, and the last ones). */
export function mergeRanked(a: readonly Ranked[], b: readonly Ranked[]): Ranked[] {
  const out: Ranked[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = byRank(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!;
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}

/** The entrants in the order of the draw (place 1 first). */
export const drawOrder = (seedHex: string, userIds: readonly string[]): string[] => rankAll(seedHex, userIds).map((r) => r.userId);
