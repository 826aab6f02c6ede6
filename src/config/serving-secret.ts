// The JWT secret a server others can reach must not be one anyone may know or guess.
import { BlockList, isIP } from 'node:net';
import { type Config, ConfigError, DEV_JWT_SECRET, MIN_SERVING_SECRET_BYTES } from '../config.js';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether HOST keeps the API on this machine: 127.0.0.0/8, ::1 (IPv4-mapped too) or localhost. */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const family = isIP(host);
  return family !== 0 && loopback.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Refuses (ConfigError) a server that others can reach with a secret anyone may know or guess:
 * whoever holds JWT_SECRET signs admin tokens. On loopback (a developer machine, the demo, the
 * tests) the built-in secret is fine.
 */
export function checkServingSecret({ host, jwtSecret }: Pick<Config, 'host' | 'jwtSecret'>): void {
  if (isLoopbackHost(host)) return;
  const bytes = Buffer.byteLength(jwtSecret, 'utf8');
  const weak =
    jwtSecret === DEV_JWT_SECRET ? 'is the built-in development secret' : bytes < MIN_SERVING_SECRET_BYTES ? `is ${bytes} bytes long` : null;
  if (weak === null) return;
  throw new ConfigError(
    `JWT_SECRET ${weak} and HOST ${host} is not a loopback address: anyone could sign an admin token; ` +
      `set JWT_SECRET to a random secret of at least ${MIN_SERVING_SECRET_BYTES} bytes`,
  );
}
