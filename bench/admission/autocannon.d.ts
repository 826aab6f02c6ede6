// Minimal typings for autocannon 8 (it ships none): only what run.ts uses. `Client.reqsMade` and
// `Client.responseMax` are internals of lib/httpClient.js that run.ts sets to drain the connections
// gracefully; the exact devDependency version pins them.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface RequestData {
      method: string;
      path: string;
      headers: Record<string, string>;
      body?: string | Buffer;
    }

    /** One connection. */
    interface Client extends EventEmitter {
      /** Requests written so far on this connection. */
      reqsMade: number;
      /** When set, the client stops once reqsMade reaches it and no response is pending. */
      responseMax?: number;
    }

    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      timeout?: number;
      sampleInt?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      requests?: { setupRequest?: (request: RequestData) => RequestData }[];
      setupClient?: (client: Client) => void;
    }

    interface Result {
      /** Connection errors and timeouts. */
      errors: number;
    }

    interface Instance extends EventEmitter {
      on(event: 'response', listener: (client: Client, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
    }
  }

  function autocannon(options: autocannon.Options, callback: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
