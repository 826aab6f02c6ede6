// An example receiver of seckill's order webhooks: verifies each POST, dedupes by webhook-id and
// logs the event (receiver.ts says what every receiver must do).
//
//   WEBHOOK_SECRET=whsec_... node --import tsx examples/webhook-receiver/server.ts
// Environment: WEBHOOK_SECRET (the engine's), PORT (8090).
import { createServer } from 'node:http';
import { webhookHandler } from './receiver.js';

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error('set WEBHOOK_SECRET to the engine\'s (whsec_ + base64)');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 8090);

const handler = webhookHandler(secret, (event) => {
  console.log(`${event.at} order ${event.orderId} ${event.type} (status ${event.status}, user ${event.userId}, quantity ${event.quantity}, event ${event.eventId})`);
});
createServer((req, res) => {
  if (req.method !== 'POST') return void res.writeHead(405).end();
  handler(req, res).catch(() => res.writeHead(500).end());
}).listen(port, () => console.log(`listening on :${port}`));
