import { createTokenService, ttlProblem, ttlWithin } from '../auth/tokens.js';
import { type Config, ConfigError } from '../config.js';
import { parseId } from '../id-text.js';

/** Lifetime of a token when --ttl is left out (shorter when JWT_MAX_TTL_SECONDS is). */
export const DEFAULT_TTL_SECONDS = 3600;

export interface TokenOptions {
  user: string;
  admin?: boolean;
  service?: boolean;
  ttl?: string;
}

/** `seckill token --user ID [--admin | --service] [--ttl S]`: prints a bearer token signed with JWT_SECRET. */
export async function token(config: Config, options: TokenOptions): Promise<void> {
  if (options.admin && options.service) throw new Error('--admin and --service exclude each other');
  const userId = parseId(options.user);
  if (userId === null) throw new Error(`--user must be a positive 64-bit decimal id, got "${options.user}"`);
  const maxTtlSeconds = config.jwtMaxTtlSeconds;
  if (options.ttl !== undefined && !/^\d+$/.test(options.ttl)) throw new Error(`--ttl must be a whole number of seconds, got "${options.ttl}"`);
  const ttl = options.ttl === undefined ? ttlWithin(DEFAULT_TTL_SECONDS, maxTtlSeconds) : Number(options.ttl);
  // The setting and the option disagree: a configuration error (exit 2), like an invalid setting.
  const problem = ttlProblem(ttl, maxTtlSeconds);
  if (problem !== null) throw new ConfigError(`--ttl ${ttl} ${problem}`);
  console.log(await createTokenService(config.jwtSecret, { maxTtlSeconds }).sign({ userId, admin: Boolean(options.admin), service: Boolean(options.service) }, ttl));
}
