import cluster from 'node:cluster';
import { ConfigError, formatProblem, loadConfig } from '../config/load.js';
import type { Config } from '../config/types.js';
import { startGateway } from '../gateway.js';
import { createLogger, flushLogger, type Logger } from '../observability/log.js';
import { workerCount } from '../workers/cpu-quota.js';
import { startPool } from '../workers/primary.js';
import { runWorker } from '../workers/worker.js';
import { configPathFrom, guarded, parseOptions } from './args.js';
import { type HeldHangups, holdHangups } from './hangups.js';

/** What `serve` runs: one gateway, or a pool of worker processes behind one primary. */
interface Running {
  readonly apiPort: number;
  readonly adminPort: number;
  readonly forwardAuthPort: number | null;
  readonly workers?: number;
  config(): Config;
  reload(cause: string): Promise<unknown>;
  drain(): Promise<void>;
}

/**
 * `leadgate serve`: start, print a ready line naming the ports, then live by signals:
 * SIGHUP reloads; SIGTERM/SIGINT drain and exit 0; a second one exits at once.
 */
export function runServe(args: string[], hangups: HeldHangups = holdHangups()): Promise<number> {
  return guarded(async () => {
    const { config: option } = parseOptions(args, ['config'], [], 'serve');
    const path = configPathFrom(option);
    if (cluster.isWorker) {
      hangups.release();
      return runWorker(path);
    }
    const logger = createLogger();
    const running = await start(path, logger);
    if (running === null) {
      hangups.release();
      // Everything it opened is closed again; should a handle still hold the loop, exit anyway.
      setTimeout(() => process.exit(1), EXIT_WAIT_MS).unref();
      return 1;
    }
    liveBySignals(running, logger);
    // one SIGHUP that came while starting: the file may have changed since it was read
    hangups.release(() => void running.reload('sighup'));
    announce(running, logger);
    return 0;
  });
}

/** One gateway, or (`workers` > 1) a pool; null when it cannot start (said on stderr and the log). */
async function start(path: string, logger: Logger): Promise<Running | null> {
  try {
    const config = loadConfig(path, { env: process.env });
    const count = workerCount(config.workers);
    if (count > 1) return await startPool({ configPath: path, config, logger, count });
    return await startGateway({
      configPath: path,
      config,
      logger,
      watch: process.env.LEADGATE_WATCH !== '0',
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      logger.fatal({ problems: err.problems.map(formatProblem) }, 'config refused');
      for (const problem of err.problems) process.stderr.write(`${formatProblem(problem)}\n`);
    } else {
      logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'cannot start');
    }
    flushLogger(logger);
    return null;
  }
}

/**
 * Signal handlers first: until Node installs one, SIGTERM's default action kills the process
 * outright, so a supervisor that signals right after the ready line would skip the drain.
 */
function liveBySignals(running: Running, logger: Logger): void {
  process.on('uncaughtException', (err) => {
    // a bug: say so in the structured log (message only: no request data), then let Kubernetes restart us
    logger.fatal({ err: err.message, stack: err.stack }, 'uncaught exception; exiting');
    flushLogger(logger);
    process.exit(70);
  });
  process.on('SIGHUP', () => void running.reload('sighup'));
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      flushLogger(logger);
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    void running.drain().then(() => {
      logger.info('drained; bye');
      flushLogger(logger);
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function announce(running: Running, logger: Logger): void {
  const config = running.config();
  logger.info(
    {
      listen: `${config.listen.host}:${running.apiPort}`,
      admin: `${config.admin.host}:${running.adminPort}`,
      ...(config.forwardAuth === null
        ? {}
        : { forward_auth: `${config.forwardAuth.listen.host}:${running.forwardAuthPort}` }),
      upstream: config.upstream.url.origin,
      keys: config.keys.size,
      workers: running.workers ?? 1,
      config: config.file,
    },
    'leadgate ready',
  );
}

/** After a failed start, the longest the process waits for its handles to close. */
const EXIT_WAIT_MS = 2_000;
