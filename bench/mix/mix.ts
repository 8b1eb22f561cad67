import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What scripts/record-mix.ts writes into a recorded value, and the load fills in. */
export const PLACEHOLDERS = { host: '{host}', apikey: '{apikey}', token: '{token}' } as const;

export interface RecordedClient {
  readonly client: string;
  readonly version: string;
  /** The request's header lines as the client sent them: names as spelled, in order. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

export interface Recorded {
  readonly recorded: string;
  readonly path: string;
  readonly clients: readonly RecordedClient[];
}

/** bench/mix/clients.json, recorded by `npm run bench:record-mix` (read from beside this file or from dist/). */
export function recordedClients(): Recorded {
  const file = ['./clients.json', '../../../bench/mix/clients.json']
    .map((f) => fileURLToPath(new URL(f, import.meta.url)))
    .find((f) => existsSync(f));
  if (file === undefined) throw new Error('bench/mix/clients.json is missing: npm run bench:record-mix');
  return JSON.parse(readFileSync(file, 'utf8')) as Recorded;
}

/**
 * The recorded clients' GETs of `path` as raw request heads, one per client, each with its own
 * header names, spelling and order: `host` and the credentials filled in. A client that sent no
 * Connection header keeps its connection open in HTTP/1.1 as every one of them does; one that
 * asked to close (PHP's `Connection: close`, urllib's) is sent keep-alive instead, so the load
 * measures requests, not connection set-up.
 */
export function mixedRequests(
  recorded: Recorded,
  values: { host: string; apikey: string; token: string },
): string[] {
  return recorded.clients.map((c) => {
    const lines = [`GET ${recorded.path} HTTP/1.1`];
    for (const [name, value] of c.headers) {
      const filled = value
        .split(PLACEHOLDERS.host)
        .join(values.host)
        .split(PLACEHOLDERS.apikey)
        .join(values.apikey)
        .split(PLACEHOLDERS.token)
        .join(values.token);
      lines.push(`${name}: ${name.toLowerCase() === 'connection' ? 'keep-alive' : filled}`);
    }
    return `${lines.join('\r\n')}\r\n\r\n`;
  });
}
