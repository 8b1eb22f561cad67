import { ConfigError, type ConfigProblem, configFromThread, loadConfig } from './load.js';
import { loadInThread } from './thread.js';
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
}

/**
 * Reloads for the gateway. The content fingerprint of the files the serving config read decides
 * `unchanged` before anything is parsed; the same broken content is `unchanged` too (one broken
 * edit counts once as failed). Parsing, validation and the key table's build run in the loader
 * thread, which hands the table over in one message; the new Config is applied whole.
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

async function loadOffThread(options: ReloaderOptions, failedFingerprint: string | null): Promise<Outcome> {
  const current = options.current();
  const loading = loadInThread({
    path: options.path,
    env: options.env,
    previousFiles: current.watchedFiles,
    known: failedFingerprint === null ? [current.hash] : [current.hash, failedFingerprint],
  });
  if (loading === null) return loadHere(options, current);
  const outcome = await loading;
  if (outcome.kind === 'config') return { kind: 'config', config: configFromThread(outcome) };
  if (outcome.kind === 'error') return threadFailure(options.path, outcome.message);
  return outcome;
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

function threadFailure(file: string, message: string): Outcome {
  return {
    kind: 'failed',
    fingerprint: null,
    problems: [{ file, line: null, field: '', message: `the config could not be loaded: ${message}` }],
  };
}
