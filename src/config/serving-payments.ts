// Simulated payments let a buyer mark their own order paid: fine on a developer machine, the demo
// and the tests, never on a server others can reach.
import { type Config, ConfigError } from '../config.js';
import { isLoopbackHost } from './serving-secret.js';

/** Refuses (ConfigError) PAYMENT_MODE=simulated on a HOST that is not loopback. */
export function checkServingPayments({ host, paymentMode }: Pick<Config, 'host' | 'paymentMode'>): void {
  if (paymentMode !== 'simulated' || isLoopbackHost(host)) return;
  throw new ConfigError(
    `PAYMENT_MODE is simulated and HOST ${host} is not a loopback address: any buyer could mark their own order paid; ` +
      'set PAYMENT_MODE=external and confirm payments from the shop (docs/payments.md)',
  );
}
