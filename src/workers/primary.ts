import cluster, { type Worker } from 'node:cluster';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Config } from '../config/types.js';
import { createConfigWatcher } from '../config/watch.js';
import { createAdminHandler } from '../http/admin.js';
import { createListenerMetrics, type Listener, openListener } from '../listener/index.js';
import { type Logger, sinkOf } from '../observability/log.js';
import { shareRevocations, startRevocations } from '../revocation/index.js';
import { answerStoreRequest, STORE_EPOCH_ENV } from '../store/ipc.js';
import { createMemoryStore } from '../store/memory.js';
import { waitUntil } from '../util/wait.js';
import { type FromPrimary, type FromWorker, isOurs } from './messages.js';
import { createPoolMetrics } from './metrics.js';

export interface PoolOptions {
  readonly configPath: string;
  readonly config: Config;
  readonly logger: Logger;
  readonly count: number;
}

export interface Pool {
  readonly apiPort: number;
  readonly adminPort: number;
  readonly forwardAuthPort: number | null;
  readonly workers: number;
  config(): Config;
  reload(cause: string): Promise<void>;
  drain(): Promise<void>;
}

interface Member {
  ready: boolean;
  notReady: string | null;
}

/** A worker that dies sooner than this after the previous restart waits out the rest first. */
const RESTART_BACKOFF_MS = 1_000;

/**
 * The primary of a worker pool (`workers` > 1, node:cluster): forks the workers, restarts one that
 * dies, holds the pod's memory store when there is no Redis, serves the admin listener (metrics
 * summed over all workers, readiness from theirs), and relays SIGHUP and the drain to every worker.
 */
export async function startPool(options: PoolOptions): Promise<Pool> {
  const { config, logger, count } = options;
  const store = config.state.redis === null ? createMemoryStore() : null;
  const members = new Map<Worker, Member>();
  const readyCount = () => [...members.values()].filter((m) => m.ready && m.notReady === null).length;
  const own = poolMetrics(count, readyCount);
  let draining = false;
  let lastRestart = 0;
  const first: { ready: Extract<FromWorker, { leadgate: 'ready' }> | null } = { ready: null };
  const metrics = createPoolMetrics((worker, id) =>
    worker.send({ leadgate: 'metrics', id } satisfies FromPrimary),
  );
  // One revocation set per pod: the primary syncs it and sends it whole to every worker.
  const revocations = startRevocations(config.state, { logger, registry: own.registry });
  const answerHello = shareRevocations(revocations, (message) => {
    for (const worker of members.keys()) if (worker.isConnected()) worker.send(message);
  });
  await Promise.race([revocations.loaded, new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);

  const fork = () => {
    // The pod's memory store began with the primary: each worker reports that in its metrics.
    const worker = cluster.fork(store === null ? {} : { [STORE_EPOCH_ENV]: String(store.epochMs) });
    members.set(worker, { ready: false, notReady: 'starting' });
    worker.on('message', (message: unknown) => onMessage(worker, message));
    logger.info({ worker_pid: worker.process.pid }, 'worker started');
  };
  const onMessage = (worker: Worker, message: unknown) => {
    if (!isOurs<FromWorker>(message)) return;
    const member = members.get(worker);
    if (message.leadgate === 'log') sinkOf(logger).write(message.text);
    else if (message.leadgate === 'revocations-hello') {
      const reply = answerHello();
      if (reply !== null) worker.send(reply);
    } else if (message.leadgate === 'store' && store !== null)
      worker.send(answerStoreRequest(store, message));
    else if (message.leadgate === 'readiness' && member) member.notReady = message.notReady;
    else if (message.leadgate === 'metrics') metrics.answered(message.id, message.metrics);
    else if (message.leadgate === 'ready' && member) {
      member.ready = true;
      member.notReady = null;
      first.ready ??= message;
    }
  };

  cluster.setupPrimary({ serialization: 'advanced' });
  let check: NodeJS.Timeout | undefined;
  const started = new Promise<void>((resolve, reject) => {
    cluster.on('exit', (worker, code, signal) => {
      const member = members.get(worker);
      members.delete(worker);
      metrics.gone(worker);
      if (draining) return;
      if (member?.ready !== true && first.ready === null) {
        // not one worker came up: give up on the pool (serve exits 1) and leave no worker behind
        clearInterval(check);
        for (const other of members.keys()) other.process.kill('SIGKILL');
        reject(new Error(`a worker exited while starting (code ${code ?? signal})`));
        return;
      }
      own.restarts.inc();
      logger.error({ worker_pid: worker.process.pid, code, signal }, 'worker died; starting another');
      const wait = Math.max(0, lastRestart + RESTART_BACKOFF_MS - Date.now());
      lastRestart = Date.now() + wait;
      setTimeout(fork, wait).unref();
    });
    check = setInterval(() => {
      if ([...members.values()].filter((m) => m.ready).length >= count) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  for (let i = 0; i < count; i++) fork();
  await started;

  const readiness = () => {
    if (draining) return 'draining';
    if (readyCount() === 0) {
      return [...members.values()].find((m) => m.notReady !== null)?.notReady ?? 'no worker ready';
    }
    return null;
  };
  const readyWorkers = () =>
    [...members].filter(([worker, m]) => m.ready && worker.isConnected()).map(([worker]) => worker);
  let admin: Listener;
  try {
    // the admin listener as a single gateway opens it (CONTRACT §11: `tls:` too)
    admin = await openListener(config.admin, {
      name: 'admin',
      handler: createAdminHandler(
        {
          contentType: own.registry.contentType,
          metrics: () => metrics.collect(readyWorkers(), own.registry),
        },
        { notReadyBecause: readiness },
      ),
      h1: {
        maxHeaderSize: config.limits.maxHeaderBytes,
        headersTimeout: config.limits.headerTimeoutMs,
        requestTimeout: config.limits.requestTimeoutMs,
        keepAliveTimeout: config.limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: Math.min(1000, config.limits.headerTimeoutMs),
      },
      metrics: createListenerMetrics(own.registry, [
        { name: 'admin', tls: config.admin.tls !== null, proxyProtocol: false },
      ]),
      watch: (files, onChange) => createConfigWatcher(files, onChange),
      log: (level, fields, message) => logger[level](fields, message),
    });
  } catch (err) {
    // No pool half up: the workers serving the API port go too, and serve exits 1.
    draining = true;
    for (const worker of members.keys()) worker.process.kill('SIGKILL');
    throw err;
  }

  const tell = (message: FromPrimary) => {
    for (const worker of members.keys()) if (worker.isConnected()) worker.send(message);
  };
  let drained: Promise<void> | null = null;
  return {
    apiPort: first.ready?.apiPort ?? 0,
    adminPort: admin.port,
    forwardAuthPort: first.ready?.forwardAuthPort ?? null,
    workers: count,
    config: () => config,
    async reload(cause) {
      tell({ leadgate: 'reload', cause });
    },
    drain() {
      drained ??= (async () => {
        draining = true;
        tell({ leadgate: 'drain' });
        const { delayS, timeoutS } = config.shutdown;
        await waitUntil(() => members.size === 0, (delayS + timeoutS + 5) * 1000);
        for (const worker of members.keys()) worker.process.kill('SIGKILL');
        await admin.close();
        revocations.close();
        await store?.close();
      })();
      return drained;
    },
  };
}

/** The pool's own metrics, served beside the workers' sums (exported for docs/reference/metrics.md). */
export function poolMetrics(count: number, readyWorkers: () => number) {
  const registry = new Registry();
  const configured = new Gauge({
    name: 'leadgate_workers',
    help: 'Worker processes the pool runs (workers)',
    registers: [registry],
  });
  configured.set(count);
  return {
    registry,
    ready: new Gauge({
      name: 'leadgate_workers_ready',
      help: 'Worker processes ready to serve',
      registers: [registry],
      collect() {
        this.set(readyWorkers());
      },
    }),
    restarts: new Counter({
      name: 'leadgate_worker_restarts_total',
      help: 'Workers that died and were started again',
      registers: [registry],
    }),
  };
}
