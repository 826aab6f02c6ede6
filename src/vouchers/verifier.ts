// What claims wait on after a Redis master change: a voucher's state verified against the database
// on the master that now holds it (consistency/verification.ts verifies it).
import type { Voucher } from './voucher.js';

export interface VoucherVerifier {
  /** Resolves true once every segment of the voucher is verified on the master that holds it. */
  verify(voucher: Voucher): Promise<boolean>;
  /** Verifies every seckill voucher whose sale has not ended; resolves to how many were. */
  verifyLive(): Promise<number>;
}
