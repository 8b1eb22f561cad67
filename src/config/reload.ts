import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { KeyTable } from './key-table.js';
import { buildConfig, buildKeys, ConfigError, type ConfigProblem, loadConfig } from './load.js';
import type { LoadMessage, LoadRequest } from './load-worker.js';
import type { Config } from './types.js';

export type ReloadResult = 'ok' | 'unchanged' | 'failed';

export interface ReloadReport {
  readonly cause: string;
  readonly result: ReloadResult;
  readonly seconds: number;
  readonly config: Config | null;
  readonly problems: readonly ConfigProblem[];
  /** The previous attempt had failed and this one loaded. */
  readonly recovered: boolean;
}

export interface ConfigReloader {
  /**
   * Loads the config again away from the event loop and hands a new Config to `apply` in one
   * step. Calls that arrive while a reload runs coalesce into one more reload after it.
   */
  reload(cause: string): Promise<ReloadResult>;
}

export interface ReloaderOptions {
  readonly path: string;
  readonly env: NodeJS.ProcessEnv;
  readonly current: () => Config;
  readonly apply: (next: Config) => void;
  readonly report: (report: ReloadReport) => void;
  /** Keys built per event-loop turn (default 2,000: a few milliseconds each). */
  readonly batch?: number;
}

/**
 * Reloads for the gateway. The content fingerprint of the files the serving config read decides
 * `unchanged` before anything is parsed; the same broken content is `unchanged` too (one broken
 * edit counts once as failed). Parsing and validation run in a worker thread; the keys come back
 * in batches, each built in its own turn of the event loop, and the new Config is applied whole.
 */
export function createConfigReloader(options: ReloaderOptions): ConfigReloader {
  let failedFingerprint: string | null = null;
  let lastResult: ReloadResult = 'ok';

  const attempt = async (cause: string): Promise<ReloadResult> => {
    const t0 = process.hrtime.bigint();
    const outcome = await loadOffThread(options, failedFingerprint);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    let problems: readonly ConfigProblem[] = [];
    let result: ReloadResult;
    if (outcome.kind === 'config') {
      options.apply(outcome.config);
      failedFingerprint = null;
      result = 'ok';
    } else if (outcome.kind === 'failed') {
      failedFingerprint = outcome.fingerprint;
      problems = outcome.problems;
      result = 'failed';
    } else result = 'unchanged';
    const recovered = result === 'ok' && lastResult === 'failed';
    if (result !== 'unchanged') lastResult = result;
    options.report({
      cause,
      result,
      seconds,
      config: outcome.kind === 'config' ? outcome.config : null,
      problems,
      recovered,
    });
    return result;
  };

  let running: Promise<ReloadResult> | null = null;
  let pending: Promise<ReloadResult> | null = null;
  const start = (cause: string): Promise<ReloadResult> => {
    running = attempt(cause).finally(() => {
      running = null;
    });
    return running;
  };

  return {
    reload(cause) {
      // One more reload after the running one, shared by every call that arrives meanwhile.
      if (pending !== null) return pending;
      if (running === null) return start(cause);
      pending = running.then(() => {
        pending = null;
        return start(cause);
      });
      return pending;
    },
  };
}

type Outcome =
  | { readonly kind: 'config'; readonly config: Config }
  | { readonly kind: 'unchanged' }
  | {
      readonly kind: 'failed';
      readonly fingerprint: string | null;
      readonly problems: readonly ConfigProblem[];
    };

function loadOffThread(options: ReloaderOptions, failedFingerprint: string | null): Promise<Outcome> {
  const script = workerScript();
  const current = options.current();
  if (script === null) return Promise.resolve(loadHere(options, current));
  const request: LoadRequest = {
    path: options.path,
    env: options.env,
    previousFiles: current.watchedFiles,
    known: failedFingerprint === null ? [current.hash] : [current.hash, failedFingerprint],
    batch: options.batch ?? 2_000,
  };
  return new Promise((resolve) => {
    const worker = new Worker(script, { workerData: request, env: {} });
    /** Once the config has come: it, and the table its keys are built into, sized for them. */
    let building: {
      readonly meta: Extract<LoadMessage, { type: 'config' }>['config'];
      readonly keys: KeyTable;
    } | null = null;
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      resolve(outcome);
    };
    worker.on('message', (message: LoadMessage) => {
      if (message.type === 'unchanged') settle({ kind: 'unchanged' });
      else if (message.type === 'failed')
        settle({ kind: 'failed', fingerprint: message.fingerprint, problems: message.problems });
      else if (message.type === 'config') {
        building = { meta: message.config, keys: new KeyTable(message.keyCount) };
        worker.postMessage('next');
      } else if (message.type === 'keys') {
        if (building !== null) buildKeys(message.keys, building.keys);
        // Requests and timers get their turn before the next batch is even asked for.
        setImmediate(() => worker.postMessage('next'));
      } else if (building !== null)
        settle({ kind: 'config', config: buildConfig(building.meta, building.keys) });
    });
    worker.on('error', (err) => settle(threadFailure(options.path, err)));
    worker.on('exit', () => settle(threadFailure(options.path, new Error('the loader thread ended early'))));
  });
}

/** Where no compiled worker script exists (running from TypeScript sources): load in place. */
function loadHere(options: ReloaderOptions, current: Config): Outcome {
  try {
    const config = loadConfig(options.path, { env: options.env });
    return config.hash === current.hash ? { kind: 'unchanged' } : { kind: 'config', config };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { kind: 'failed', fingerprint: null, problems: err.problems };
  }
}

function threadFailure(file: string, err: Error): Outcome {
  return {
    kind: 'failed',
    fingerprint: null,
    problems: [{ file, line: null, field: '', message: `the config could not be loaded: ${err.message}` }],
  };
}

/** The compiled worker beside this module, or under dist/ when this module runs from sources. */
function workerScript(): URL | null {
  const beside = new URL('./load-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(beside))) return beside;
  const compiled = new URL('../../dist/src/config/load-worker.js', import.meta.url);
  return existsSync(fileURLToPath(compiled)) ? compiled : null;
}
