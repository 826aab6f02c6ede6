import type { Migration } from 'kysely';
import * as initial from './0001-initial.js';
import * as lifecycle from './0002-lifecycle.js';
import * as voucherVersion from './0003-voucher-version.js';
import * as voucherSegments from './0004-voucher-segments.js';
import * as orderEvents from './0005-order-events.js';
import * as idempotencyKeyCase from './0006-idempotency-key-case.js';
import * as orderCounts from './0007-order-counts.js';
import * as voucherQueues from './0008-voucher-queues.js';
import * as queuePrequeue from './0009-queue-prequeue.js';
import * as pricesPayments from './0010-prices-payments.js';
import * as stripeEvents from './0011-stripe-events.js';
import * as webhookEvents from './0012-webhook-events.js';
import * as traceParent from './0013-trace-parent.js';
import * as releaseTrace from './0014-release-trace.js';

/** Every migration, in order. Names never change once released. */
export const migrations: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-lifecycle': lifecycle,
  '0003-voucher-version': voucherVersion,
  '0004-voucher-segments': voucherSegments,
  '0005-order-events': orderEvents,
  '0006-idempotency-key-case': idempotencyKeyCase,
  '0007-order-counts': orderCounts,
  '0008-voucher-queues': voucherQueues,
  '0009-queue-prequeue': queuePrequeue,
  '0010-prices-payments': pricesPayments,
  '0011-stripe-events': stripeEvents,
  '0012-webhook-events': webhookEvents,
  '0013-trace-parent': traceParent,
  '0014-release-trace': releaseTrace,
};
