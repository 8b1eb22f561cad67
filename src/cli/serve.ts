import { ConfigError, formatProblem } from '../config/load.js';
import { startGateway } from '../gateway.js';
import { createLogger, flushLogger } from '../observability/log.js';
import { configPathFrom, guarded, parseOptions } from './args.js';

/**
 * `leadgate serve`: start, print a ready line naming the ports, then live by signals:
 * SIGHUP reloads; SIGTERM/SIGINT drain and exit 0; a second one exits at once.
 */
export function runServe(args: string[]): Promise<number> {
  return guarded(async () => {
    const { config: option } = parseOptions(args, ['config']);
    const path = configPathFrom(option);
    const logger = createLogger();
    let gateway: Awaited<ReturnType<typeof startGateway>>;
    try {
      gateway = await startGateway({ configPath: path, logger, watch: process.env.LEADGATE_WATCH !== '0' });
    } catch (err) {
      if (err instanceof ConfigError) {
        logger.fatal({ problems: err.problems.map(formatProblem) }, 'config refused');
        for (const problem of err.problems) process.stderr.write(`${formatProblem(problem)}\n`);
      } else {
        logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'cannot start');
      }
      flushLogger(logger);
      return 1;
    }
    // Signal handlers first: until Node installs one, SIGTERM's default action kills the
    // process outright, so a supervisor that signals right after the ready line would skip the drain.
    process.on('uncaughtException', (err) => {
      // a bug: say so in the structured log (message only: no request data), then let Kubernetes restart us
      logger.fatal({ err: err.message, stack: err.stack }, 'uncaught exception; exiting');
      flushLogger(logger);
      process.exit(70);
    });
    process.on('SIGHUP', () => void gateway.reload('sighup'));
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        flushLogger(logger);
        process.exit(1);
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      gateway.drain().then(() => {
        logger.info('drained; bye');
        flushLogger(logger);
        process.exit(0);
      });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const config = gateway.config();
    logger.info(
      {
        listen: `${config.listen.host}:${gateway.apiPort}`,
        admin: `${config.admin.host}:${gateway.adminPort}`,
        ...(config.forwardAuth === null
          ? {}
          : { forward_auth: `${config.forwardAuth.listen.host}:${gateway.forwardAuthPort}` }),
        upstream: config.upstream.url.origin,
        keys: config.keys.size,
        config: config.file,
      },
      'leadgate ready',
    );

    return 0;
  });
}
