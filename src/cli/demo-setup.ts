// What every demo shares: a database and key prefix of its own, and where to watch it.
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';

/**
 * The demo keeps its own database and key prefix so it never touches real data. Payments come
 * from the shop, as in production (PAYMENT_MODE=external): the demo plays the shop's payment
 * provider, signing Stripe webhook events with a secret of this run unless one is set.
 */
export function demoConfig(config: Config): Config {
  const url = new URL(config.databaseUrl);
  url.pathname = `${url.pathname.slice(1)}_demo`;
  const stripeWebhookSecret = config.stripeWebhookSecret || `whsec_${randomBytes(24).toString('base64')}`;
  return { ...config, databaseUrl: url.toString(), redisPrefix: `${config.redisPrefix}-demo`, port: 0, logLevel: 'warn', paymentMode: 'external', stripeWebhookSecret };
}

/** Where a person can watch the sale: the operator console and the voucher's store page. */
export function demoLinks(url: string, voucherId: string): string {
  return (
    `Watch it: console ${url}/console (sign in with an admin token: seckill token --user 1 --admin)` +
    `\n          store   ${url}/store/${voucherId} (a buyer token: seckill token --user 42)`
  );
}
