import { type Gateway, startGateway } from '../gateway.js';
import { createLogger, flushLogger, type Logger } from '../observability/log.js';
import { type RevocationChannel, receiveRevocations } from '../revocation/index.js';
import { createIpcStore, STORE_EPOCH_ENV, type WorkerChannel } from '../store/ipc.js';
import { type FromPrimary, type FromWorker, isOurs } from './messages.js';

/** How often a worker tells the primary whether it is ready (only when that changed). */
const READINESS_EVERY_MS = 1_000;

const send = (message: FromWorker) => {
  if (process.connected) process.send?.(message);
};

/**
 * One process of a worker pool (`workers` > 1): the whole gateway on the shared API listeners,
 * without its own admin listener. Logs go to the primary (one writer on stdout, lines never
 * interleaved); the store is the primary's memory unless Redis is configured; the revocation set
 * is the one the primary syncs and sends; metrics are sent to
 * the primary when it asks (metrics.ts); the primary says when to drain and reload.
 */
export async function runWorker(configPath: string): Promise<number> {
  const logger = createLogger({
    destination: { write: (text: string) => send({ leadgate: 'log', text }) },
  }).child({ worker_pid: process.pid });
  let gateway: Gateway;
  try {
    gateway = await startGateway({
      configPath,
      logger,
      watch: process.env.LEADGATE_WATCH !== '0',
      remoteStore: createIpcStore(
        process as unknown as WorkerChannel,
        Number(process.env[STORE_EPOCH_ENV]) || undefined,
      ),
      adminListener: false,
      // the pod's one revocation set, synced by the primary
      revocations: receiveRevocations(process as unknown as RevocationChannel),
    });
  } catch (err) {
    logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'worker cannot start');
    flushLogger(logger);
    process.exit(1); // the IPC channel would keep this process alive; the primary sees the exit
  }
  obey(gateway, logger);
  send({ leadgate: 'ready', apiPort: gateway.apiPort, forwardAuthPort: gateway.forwardAuthPort });
  let reported: string | null = null;
  setInterval(() => {
    const now = gateway.notReadyBecause();
    if (now === reported) return;
    reported = now;
    send({ leadgate: 'readiness', notReady: now });
  }, READINESS_EVERY_MS).unref();
  return 0;
}

/** The primary's orders; a signal sent to the worker itself (a terminal's Ctrl-C) drains too. */
function obey(gateway: Gateway, logger: Logger): void {
  let draining = false;
  const drain = () => {
    if (draining) return;
    draining = true;
    void gateway.drain().then(() => {
      flushLogger(logger);
      process.exit(0);
    });
  };
  process.on('message', (message: unknown) => {
    if (!isOurs<FromPrimary>(message)) return;
    if (message.leadgate === 'drain') drain();
    else if (message.leadgate === 'reload') void gateway.reload(message.cause);
    else if (message.leadgate === 'metrics') {
      const { id } = message;
      void gateway.metrics.registry
        .getMetricsAsJSON()
        .then((metrics) => send({ leadgate: 'metrics', id, metrics }));
    }
  });
  process.on('SIGTERM', drain);
  process.on('SIGINT', drain);
  process.on('disconnect', drain); // the primary is gone
  process.on('uncaughtException', (err) => {
    logger.fatal({ err: err.message, stack: err.stack }, 'uncaught exception in a worker; exiting');
    flushLogger(logger);
    process.exit(70);
  });
}
