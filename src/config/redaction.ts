// What `seckill config` shows of the configuration: nothing that signs a token or opens a store.
import type { Config } from '../config.js';

const REDACTED = '<redacted>';

/** `raw` with the password of its URL (if it is one with a password) replaced; the user stays. */
function withoutPassword(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return raw;
  }
  if (u.password === '') return raw;
  return `${u.protocol}//${u.username}:${REDACTED}@${u.host}${u.pathname}${u.search}${u.hash}`;
}

/** The configuration as `seckill config` prints it: the signing secrets and every password in a URL redacted. */
export function redactedConfig(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) out[key] = typeof value === 'string' ? withoutPassword(value) : value;
  const secret = (value: string) => (value === '' ? '' : REDACTED);
  return { ...out, jwtSecret: REDACTED, stripeWebhookSecret: secret(config.stripeWebhookSecret), webhookSecret: secret(config.webhookSecret) };
}
