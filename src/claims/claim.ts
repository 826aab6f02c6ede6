// What every claimer takes and answers, whatever the voucher's kind (claimers.ts picks one per kind).
import type { Voucher } from '../vouchers/voucher.js';

export interface Claim {
  voucher: Voucher;
  userId: bigint;
  quantity: number;
  idempotencyKey?: string;
}

export interface Claimed {
  orderId: string;
  /** processing: admitted, stored later (202); pending_payment: stored before the answer (201). */
  status: 'processing' | 'pending_payment';
  /** false when an earlier claim with the same Idempotency-Key was answered again. */
  fresh: boolean;
}

export type Claimer = (claim: Claim) => Promise<Claimed>;
