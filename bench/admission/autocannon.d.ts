// Minimal typings for autocannon 8 (the package ships none and @types/autocannon is not a
// dependency). Only what the admission benchmark uses is declared. `Client.reqsMade` and
// `Client.responseMax` are internals of lib/httpClient.js that run.ts relies on to drain the
// connections gracefully; they are pinned by the exact devDependency version.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    /** The request as the builder sees it; setupRequest may change any field. */
    interface RequestData {
      method: string;
      path: string;
      headers: Record<string, string>;
      body?: string | Buffer;
    }

    interface RequestSpec {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (request: RequestData, context: Record<string, unknown>) => RequestData | null | undefined;
    }

    /** One connection. */
    interface Client extends EventEmitter {
      /** Requests written so far on this connection. */
      reqsMade: number;
      /** When set, the client stops (emits 'done') once reqsMade reaches it and no response is pending. */
      responseMax?: number;
      destroyed: boolean;
    }

    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      duration?: number;
      amount?: number;
      timeout?: number;
      sampleInt?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      requests?: RequestSpec[];
      setupClient?: (client: Client) => void;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      p50: number;
      p90: number;
      p99: number;
      [percentile: string]: number;
    }

    interface Result {
      latency: Histogram;
      requests: Histogram;
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      totalRequests: number;
      totalCompletedRequests: number;
      statusCodeStats: Record<string, { count: number }>;
    }

    interface Instance extends EventEmitter {
      stop(): void;
      on(event: 'response', listener: (client: Client, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
      on(event: string, listener: (...args: any[]) => void): this;
    }
  }

  function autocannon(options: autocannon.Options, callback: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
