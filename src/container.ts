// Composition, once, by role: the core (clients, stores, repair services), then the API's
// dependencies, then the workers. `seckill serve`, the demo, the benchmarks and the tests build
// the whole container; `seckill worker` builds the core and the workers; `seckill audit` and
// `seckill reconcile` build the core alone (composition/core.ts).
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { type Api, createApi } from './composition/api.js';
import { type Core, type CoreOptions, createCore } from './composition/core.js';
import { createWorkers, type Workers } from './composition/workers.js';

export type Container = Core & Api & Workers;
export type ContainerOptions = CoreOptions;

export async function createContainer(config: Config, log: Logger, options: ContainerOptions = {}): Promise<Container> {
  const core = await createCore(config, log, options);
  try {
    const api = await createApi(core, await core.ids());
    return { ...core, ...api, ...createWorkers(core) };
  } catch (err) {
    await core.close().catch(() => undefined);
    throw err;
  }
}
