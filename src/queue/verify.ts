// Re-checks a queue voucher's draw from what it published (GET /api/vouchers/:id, /queue and
// /queue/entrants: what anyone can read), with no access to either store: the seed matches the
// commitment made before anyone joined, the published places are the order the seed gives the
// published entrants, and the draw admitted the first places, as many as there were units.
// It uses node's own HMAC, not the draw's faster one (draw-order.ts): two implementations agree.
import { commitmentOf } from '../vouchers/queue-seed.js';
import { rankOf } from './draw-order.js';

export interface PublishedDraw {
  stock: number;
  commitment: string;
  seed: string | null;
  entrants: number;
  drawAdmitted: number;
  /** The published entrant list, in any order. */
  list: { position: number; userId: string }[];
}

export interface DrawVerdict {
  ok: boolean;
  problems: string[];
}

/** Misplaced entrants named in the verdict. */
const MAX_SHOWN = 5;

export function verifyDraw(d: PublishedDraw): DrawVerdict {
  const problems: string[] = [];
  if (d.seed === null) return { ok: false, problems: ['the draw is not published yet (no seed)'] };
  if (!/^[0-9a-f]{64}$/.test(d.seed)) problems.push('the seed is not 32 bytes of hex');
  else if (commitmentOf(d.seed) !== d.commitment) problems.push(`sha256(seed) is ${commitmentOf(d.seed)}, the commitment was ${d.commitment}`);
  if (d.list.length !== d.entrants) problems.push(`${d.list.length} entrants listed, ${d.entrants} counted`);
  if (problems.length === 0) {
    const seed = d.seed;
    const ranked = d.list.map((e) => ({ ...e, rank: rankOf(seed, e.userId) })).sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
    const misplaced = ranked.flatMap((e, i) => (e.position === i + 1 ? [] : [`user ${e.userId} at ${e.position} (the seed: ${i + 1})`]));
    if (misplaced.length) {
      problems.push(`${misplaced.length} of ${ranked.length} entrants are not at the place the seed gives them: ${misplaced.slice(0, MAX_SHOWN).join(', ')}${misplaced.length > MAX_SHOWN ? ', …' : ''}`);
    }
  }
  const admitting = Math.min(d.entrants, d.stock);
  if (d.drawAdmitted !== admitting) problems.push(`the draw admitted ${d.drawAdmitted} places; ${admitting} were due (${d.stock} units, ${d.entrants} entrants)`);
  return { ok: problems.length === 0, problems };
}

/** A GET of the public API answering the JSON body (throws on an error answer). */
export type PublicGet = (path: string) => Promise<Record<string, unknown>>;

const PAGE = 10_000;

/** Reads what the API published of voucher `voucherId`'s draw. */
export async function readPublishedDraw(get: PublicGet, voucherId: string): Promise<PublishedDraw> {
  const voucher = await get(`/api/vouchers/${voucherId}`);
  const queue = await get(`/api/vouchers/${voucherId}/queue`);
  const list: PublishedDraw['list'] = [];
  for (let after = 0; ; ) {
    const page = (await get(`/api/vouchers/${voucherId}/queue/entrants?after=${after}&limit=${PAGE}`)).entrants as PublishedDraw['list'];
    list.push(...page);
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.position;
  }
  return {
    stock: Number(voucher.stock),
    commitment: String(queue.commitment),
    seed: (queue.seed as string | null) ?? null,
    entrants: Number(queue.entrants),
    drawAdmitted: Number(queue.drawAdmitted),
    list,
  };
}
