// What every demo shares: a database and key prefix of its own, and where to watch it.
import type { Config } from '../config.js';

/** The demo keeps its own database and key prefix so it never touches real data. */
export function demoConfig(config: Config): Config {
  const url = new URL(config.databaseUrl);
  url.pathname = `${url.pathname.slice(1)}_demo`;
  return { ...config, databaseUrl: url.toString(), redisPrefix: `${config.redisPrefix}-demo`, port: 0, logLevel: 'warn' };
}

/** Where a person can watch the sale: the operator console and the voucher's store page. */
export function demoLinks(url: string, voucherId: string): string {
  return (
    `Watch it: console ${url}/console (sign in with an admin token: seckill token --user 1 --admin)` +
    `\n          store   ${url}/store/${voucherId} (a buyer token: seckill token --user 42)`
  );
}
