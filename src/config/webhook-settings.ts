// Webhooks need both ends: a URL to POST to and the secret that signs what is POSTed.
import { type Config, ConfigError } from '../config.js';

/** Refuses (ConfigError) WEBHOOK_URL without WEBHOOK_SECRET: unsigned events would be sent to it. */
export function checkWebhookSettings({ webhookUrl, webhookSecret }: Pick<Config, 'webhookUrl' | 'webhookSecret'>): void {
  if (webhookUrl !== '' && webhookSecret === '') {
    throw new ConfigError('WEBHOOK_SECRET is required with WEBHOOK_URL: set it to the signing secret (whsec_ + base64) the receiver verifies with');
  }
}
