// The shop's payments as Stripe reports them: for each order the shop reads its amount, and the
// payment provider's webhook then says "payment_intent.succeeded" for it, signed with the
// endpoint's secret exactly as Stripe signs (the `stripe` package's own test header).
import Stripe from 'stripe';
import type { Deployment } from './deployment.js';
import type { ShopPayments } from './payments.js';

/** The PaymentIntent of an order: one per order, so a resent event is the same payment. */
const intentOf = (orderId: string) => `pi_bench_${orderId}`;

export function stripePayments(deployment: Deployment, secret: string): ShopPayments {
  return {
    async pay(orderId) {
      const order = await deployment.order(orderId);
      if (order.status === 'processing') return null;
      const event = {
        id: `evt_bench_${orderId}`,
        object: 'event',
        type: 'payment_intent.succeeded',
        created: Math.floor(Date.now() / 1000),
        data: { object: { id: intentOf(orderId), object: 'payment_intent', amount_received: order.amount, currency: order.currency.toLowerCase(), metadata: { orderId } } },
      };
      const signature = Stripe.webhooks.generateTestHeaderString({ payload: JSON.stringify(event), secret });
      const status = await deployment.stripeEvent(event, signature);
      if (status !== 200) return `${status} webhook refused`;
      const after = await deployment.order(orderId);
      return after.status === 'paid' ? '200 paid' : `200 order ${after.status}`;
    },
    async keptAsLate(orderId) {
      const kept = await deployment.payments('refund_due');
      const payment = kept.find((p) => p.provider === 'stripe' && p.paymentId === intentOf(orderId));
      return payment?.reason === 'late' && (await deployment.order(orderId)).status === 'expired';
    },
  };
}
