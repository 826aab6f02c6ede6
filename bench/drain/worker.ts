// A pipeline worker in its own process (run.ts --workers N), wired exactly like `seckill worker`
// (createContainer + startPipeline) but held until the parent says "go", so that process start-up
// and tsx compilation stay outside the timed window. Configuration comes from the environment.
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createContainer } from '../../src/container.js';

type Message = 'go' | 'stop';

const config = loadConfig();
const container = await createContainer(config, pino({ level: config.logLevel }, process.stderr));
process.on('message', (m: Message) => {
  if (m === 'go') {
    container.startPipeline().catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
  } else if (m === 'stop') {
    container.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  }
});
process.send?.('ready');
