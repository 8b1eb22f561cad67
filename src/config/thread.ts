import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { KeyTableState } from './key-table.js';
import type { ResolvedConfig } from './load.js';
import type { ConfigProblem } from './problems.js';

/**
 * The loader thread, as its caller (a reload) sees it: a config read, parsed, validated and its
 * key table built away from the event loop, handed over in one message.
 */
export interface LoadRequest {
  readonly path: string;
  readonly env: NodeJS.ProcessEnv;
  /** The files the serving config read: the same content again is `unchanged`. */
  readonly previousFiles: readonly string[];
  /** Fingerprints that count as `unchanged`: the serving config's, and a failed attempt's. */
  readonly known: readonly string[];
}

/** What the thread answers (one message), or what became of it. */
export type LoadOutcome =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'failed'; readonly fingerprint: string; readonly problems: readonly ConfigProblem[] }
  | { readonly kind: 'config'; readonly config: Omit<ResolvedConfig, 'keys'>; readonly keys: KeyTableState }
  /** The thread itself failed (it could not start, or threw): not a verdict on the config. */
  | { readonly kind: 'error'; readonly message: string };

/**
 * Starts the loader thread on `request`; its outcome, never a rejection. Null where no compiled
 * thread script exists (leadgate run from its TypeScript sources): the caller loads in place.
 */
export function loadInThread(request: LoadRequest): Promise<LoadOutcome> | null {
  const script = threadScript();
  if (script === null) return null;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: LoadOutcome) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      resolve(outcome);
    };
    // env: {} — the thread reads the environment it is handed in `request`, and no other.
    const worker = new Worker(script, { workerData: request, env: {} });
    worker.on('message', (outcome: LoadOutcome) => settle(outcome));
    worker.on('error', (err) => settle({ kind: 'error', message: err.message }));
    worker.on('exit', () => settle({ kind: 'error', message: 'the loader thread ended early' }));
  });
}

/** The compiled thread script beside this module, or under dist/ when this module runs from sources. */
function threadScript(): URL | null {
  const beside = new URL('./load-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(beside))) return beside;
  const compiled = new URL('../../dist/src/config/load-worker.js', import.meta.url);
  return existsSync(fileURLToPath(compiled)) ? compiled : null;
}
