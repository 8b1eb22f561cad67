import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError, fingerprint, type ResolvedConfig, validateConfig } from './load.js';

/**
 * The reload's thread: fingerprint, parse and validate a config away from the event loop, then
 * hand the result over in batches small enough that building each one never stalls requests.
 * Messages: `unchanged` | `failed` | `config` (all but the keys, and how many), then one `keys` batch per `next`
 * the main thread sends, then `end`. (A MessagePort hands every queued message over in one turn of
 * the event loop, so batches are pulled, not pushed.)
 */
export interface LoadRequest {
  readonly path: string;
  readonly env: NodeJS.ProcessEnv;
  /** The files the serving config read, and their fingerprint: the same again is `unchanged`. */
  readonly previousFiles: readonly string[];
  readonly known: readonly string[];
  readonly batch: number;
}

export type LoadMessage =
  | { readonly type: 'unchanged' }
  | { readonly type: 'failed'; readonly fingerprint: string; readonly problems: ConfigError['problems'] }
  | { readonly type: 'config'; readonly config: Omit<ResolvedConfig, 'keys'>; readonly keyCount: number }
  | { readonly type: 'keys'; readonly keys: ResolvedConfig['keys'] }
  | { readonly type: 'end' };

const request = workerData as LoadRequest;
const port = parentPort;
if (port !== null) {
  const send = (message: LoadMessage) => port.postMessage(message);
  const before = fingerprint(request.previousFiles);
  if (request.known.includes(before)) {
    send({ type: 'unchanged' });
  } else {
    try {
      const { keys, ...config } = validateConfig(request.path, { env: request.env });
      let next = 0;
      port.on('message', () => {
        if (next >= keys.length) {
          send({ type: 'end' });
          port.close();
          return;
        }
        send({ type: 'keys', keys: keys.slice(next, next + request.batch) });
        next += request.batch;
      });
      send({ type: 'config', config, keyCount: keys.length });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      send({ type: 'failed', fingerprint: before, problems: err.problems });
    }
  }
}
