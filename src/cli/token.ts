import { createTokenService } from '../auth/tokens.js';
import type { Config } from '../config.js';
import { parseId } from '../id-text.js';

export interface TokenOptions {
  user: string;
  admin?: boolean;
  ttl: string;
}

/** `seckill token --user ID [--admin] [--ttl S]`: prints a bearer token signed with JWT_SECRET. */
export async function token(config: Config, options: TokenOptions): Promise<void> {
  const userId = parseId(options.user);
  if (userId === null) throw new Error(`--user must be a positive 64-bit decimal id, got "${options.user}"`);
  const ttl = Number(options.ttl);
  if (!Number.isInteger(ttl) || ttl < 0) throw new Error(`--ttl must be a whole number of seconds (0 = no expiry), got "${options.ttl}"`);
  console.log(await createTokenService(config.jwtSecret).sign({ userId, admin: Boolean(options.admin) }, ttl));
}
