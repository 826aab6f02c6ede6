// Use case: a buyer (or an admin) reads one order. An admitted order that the pipeline has not
// stored yet is answered from its in-flight record as `processing`. Another user's order is
// reported as not found, so ids cannot be probed. So is an admission that Redis lost before the
// pipeline stored it (ADMIT_DURABILITY=memory, Redis restarted without its data): the message
// says so, since the buyer was told `processing` and may claim again (docs/api.md).
import type { Principal } from '../auth/tokens.js';
import { AppError } from '../errors.js';
import type { InflightReader } from './inflight.js';
import { NO_CURRENCY, type OrderView, orderFromInflight } from './order.js';
import type { OrderRepository } from './repository.js';
import type { VoucherDirectory } from '../vouchers/directory.js';

export interface GetOrderDeps {
  orders: OrderRepository;
  inflight: InflightReader;
  /** The price of an order not stored yet (cached: a voucher never changes). */
  directory: Pick<VoucherDirectory, 'getStored'>;
}

/** Admins and the shop's backend (service) read every order; a buyer their own. */
const readsAny = (caller: Principal) => caller.admin || caller.service === true;

export function getOrderUseCase({ orders, inflight, directory }: GetOrderDeps) {
  async function inflightOrder(orderId: bigint): Promise<OrderView | null> {
    const pending = await inflight.find(orderId);
    if (!pending) return null;
    const voucher = await directory.getStored(BigInt(pending.voucherId));
    return orderFromInflight(pending, voucher ?? { price: 0, currency: NO_CURRENCY });
  }

  return async function getOrder(caller: Principal, orderId: bigint): Promise<OrderView> {
    // In-flight first: it is removed only after the row is committed, so the order is never in neither.
    const order = (await inflightOrder(orderId)) ?? (await orders.findById(orderId));
    if (!order || (!readsAny(caller) && order.userId !== caller.userId.toString())) {
      throw new AppError('ORDER_NOT_FOUND', `order ${orderId} not found; if it was answered processing, the service lost it before storing it (nothing was taken): claim again`);
    }
    return order;
  };
}
