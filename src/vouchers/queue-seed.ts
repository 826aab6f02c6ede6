// A queue voucher's seed, drawn when the voucher is created, and the commitment to it that is
// published from the start: only the hash is public before the draw, so the seed was fixed before
// anyone joined (queue/draw-order.ts ranks the entrants with it).
import { createHash, randomBytes } from 'node:crypto';

/** A fresh seed: 32 random bytes, hex. */
export const newSeed = (): string => randomBytes(32).toString('hex');

/** The commitment published before the draw: sha256 of the seed's bytes, hex. */
export const commitmentOf = (seedHex: string): string => createHash('sha256').update(Buffer.from(seedHex, 'hex')).digest('hex');
