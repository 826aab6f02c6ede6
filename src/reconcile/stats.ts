// Use case: an operator's cheap view of one voucher in both stores. (Being written.)
export interface VoucherStats {
  initialStock: number;
  dbStock: number;
  redisStock: number | null;
  inFlight: number;
  orders: Record<'pending_payment' | 'paid' | 'cancelled' | 'expired' | 'failed', number>;
  waitlist: number;
  deadLetters: number;
}

export function voucherStatsUseCase(_deps: object) {
  return async function voucherStats(_voucherId: bigint): Promise<VoucherStats> {
    throw new Error('not built yet');
  };
}
