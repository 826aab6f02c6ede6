// The settle use case's own decisions, with the payment use cases played by functions: a lost lock
// conflict is tried again, anything else is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfirmPayment, RefundOrder } from '../../src/payments/payment.js';
import type { StripeDeliveries } from '../../src/payments/stripe-deliveries.js';
import { settleStripeEventUseCase } from '../../src/payments/stripe-settle.js';

const deliveries: StripeDeliveries = {
  firstDelivery: async () => true,
  wasApplied: async () => false,
  hold: async () => {},
  heldFor: async () => [],
  release: async () => {},
  paymentsOf: async () => [],
};
const refundOrder: RefundOrder = async () => ({ kind: 'not_found' });
const payment = { id: 'evt_1', type: 'payment_intent.succeeded', data: { object: { id: 'pi_1', amount_received: 5, currency: 'usd', metadata: { orderId: '9' } } } };

/** A confirmPayment that fails with `errors` first, then applies; counts its calls. */
function failingFirst(...errors: object[]) {
  const calls = { n: 0 };
  const confirmPayment: ConfirmPayment = async () => {
    const err = errors[calls.n++];
    if (err) throw Object.assign(new Error('failed'), err);
    return { kind: 'applied', order: {} as never };
  };
  return { calls, settle: settleStripeEventUseCase({ deliveries, confirmPayment, refundOrder, findOrder: async () => null }) };
}

describe('settling a Stripe event', () => {
  it('when its transaction loses a deadlock twice, then it is tried again and applied', async () => {
    const { calls, settle } = failingFirst({ code: 'ER_LOCK_DEADLOCK' }, { code: '40P01' });
    assert.equal(await settle(payment), 'applied');
    assert.equal(calls.n, 3);
  });

  it('when it keeps losing, or the database is unreachable, or the error is another, then the error is answered', async () => {
    const deadlock = { code: 'ER_LOCK_DEADLOCK' };
    for (const [errors, tries] of [[[deadlock, deadlock, deadlock], 3], [[{ code: 'ECONNREFUSED', syscall: 'connect' }], 1], [[{}], 1]] as const) {
      const { calls, settle } = failingFirst(...errors);
      await assert.rejects(settle(payment), /failed/);
      assert.equal(calls.n, tries);
    }
  });
});
