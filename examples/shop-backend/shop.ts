// What a shop's backend does with the engine, through the typed client (src/client): it puts a
// sale on, confirms the payments its checkout took, and refunds. Every path, body and answer is
// typed from the engine's OpenAPI document, so a renamed field fails to compile here.
import { createSeckillClient, type SeckillClient } from '../../src/client/index.js';

export interface Shop {
  /** Puts `stock` units on sale now, for `hours`, at `price` minor units of `currency`; the voucher's id. */
  putOnSale(sale: { title: string; stock: number; price: number; currency: string; hours: number; paymentTimeoutSeconds: number }): Promise<string>;
  /**
   * Tells the engine the checkout took a payment. `paid`: the order is paid now (or was, by this
   * same payment). Otherwise the engine kept the payment as refund_due (the order had expired,
   * was paid by another payment, or the amount differs): the shop gives the money back.
   */
  confirmPayment(orderId: string, payment: { paymentId: string; amount: number; currency: string }): Promise<'paid' | { refundDue: string }>;
  /** Refunds a paid order; `restock`: its units go back on sale while the sale is open. */
  refund(orderId: string, restock: boolean): Promise<void>;
}

/** What the engine answered when it was not the expected success. */
class EngineRefusal extends Error {
  constructor(what: string, status: number, body: unknown) {
    super(`${what}: ${status} ${JSON.stringify(body)}`);
  }
}

export function createShop(options: { baseUrl: string; adminToken: string; serviceToken: string }): Shop {
  // Creating a voucher is an admin route; payments and refunds need only the service role.
  const admin: SeckillClient = createSeckillClient({ baseUrl: options.baseUrl, token: options.adminToken });
  const service: SeckillClient = createSeckillClient({ baseUrl: options.baseUrl, token: options.serviceToken });
  return {
    async putOnSale({ title, stock, price, currency, hours, paymentTimeoutSeconds }) {
      const beginAt = new Date();
      const { data, error, response } = await admin.POST('/api/vouchers', {
        body: { title, kind: 'seckill', stock, price, currency, paymentTimeoutSeconds, beginAt: beginAt.toISOString(), endAt: new Date(beginAt.getTime() + hours * 3_600_000).toISOString() },
      });
      if (!data) throw new EngineRefusal('create the voucher', response.status, error);
      return data.id;
    },
    async confirmPayment(orderId, { paymentId, amount, currency }) {
      const { data, error, response } = await service.POST('/api/orders/{id}/payments', {
        params: { path: { id: orderId } },
        body: { paymentId, amount, currency, provider: 'shop' },
      });
      if (data) return 'paid';
      // Kept as refund_due: the order's state says why (ORDER_EXPIRED, ORDER_PAID, PAYMENT_MISMATCH, …).
      if (response.status === 409 && error.code !== 'ORDER_PROCESSING') return { refundDue: error.code };
      throw new EngineRefusal(`confirm payment ${paymentId}`, response.status, error);
    },
    async refund(orderId, restock) {
      const { data, error, response } = await service.POST('/api/orders/{id}/refund', { params: { path: { id: orderId } }, body: { restock } });
      if (!data) throw new EngineRefusal(`refund order ${orderId}`, response.status, error);
    },
  };
}
