import http from 'node:http';
import type { Socket } from 'node:net';
import { formatProblem, loadConfig } from './config/load.js';
import { createConfigReloader, type ReloadReport, type ReloadResult } from './config/reload.js';
import type { Config } from './config/types.js';
import { type ConfigWatcher, createConfigWatcher } from './config/watch.js';
import { buildGeneration, type Generation, type SharedDeps } from './generation.js';
import { createAdminHandler, type Readiness } from './http/admin.js';
import { BodyWatch } from './http/body.js';
import { closeOutClientError } from './http/close-out.js';
import { type ConnectionGuard, createConnectionGuard } from './http/connection.js';
import { type Lifecycle, serving, startDrain } from './http/drain.js';
import type { HandlerDeps } from './http/entry.js';
import type { Forwarder } from './http/forward.js';
import { createForwardAuthHandler } from './http/forward-auth.js';
import { createUndiciForwarder } from './http/forward-undici.js';
import { createRequestHandler } from './http/server.js';
import { createUpstreamHealth, type UpstreamHealth } from './http/upstream-health.js';
import {
  type ConnectionBounds,
  createListenerMetrics,
  type H1Options,
  type HttpServer,
  type Listener,
  type ListenerDeps,
  type ListenerSettings,
  openListener,
} from './listener/index.js';
import { createLogger, type Logger, sinkOf } from './observability/log.js';
import { createMetrics, type Metrics, zeroRateLimited } from './observability/metrics.js';
import { createRequestLog } from './observability/request-log.js';
import { type Revocations, startRevocations } from './revocation/index.js';
import { openStateStore, type StateStore } from './store/index.js';
import { startTracing } from './tracing/index.js';
import { sleep, waitUntil } from './util/wait.js';

export interface GatewayOptions {
  readonly configPath: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: Logger;
  /** Watch the config and the files it names, and reload on change (default true). */
  readonly watch?: boolean;
  /** The clock, in unix seconds (tests freeze it). */
  readonly now?: () => number;
  /** In a worker pool without Redis: the primary's store, over IPC. */
  readonly remoteStore?: StateStore;
  /** The config, already loaded by the caller (else loaded from `configPath`). */
  readonly config?: Config;
  /** Serve /healthz, /readyz and /metrics (default true; a pool's primary serves them instead). */
  readonly adminListener?: boolean;
  /** In a worker pool: the set the primary syncs and sends (else this gateway syncs its own). */
  readonly revocations?: Revocations;
}

export interface Gateway {
  readonly apiPort: number;
  readonly adminPort: number;
  /** The forward-auth listener's port, or null when `forward_auth` is not configured. */
  readonly forwardAuthPort: number | null;
  readonly metrics: Metrics;
  readonly config: () => Config;
  /**
   * Loads the config again off the event loop; a config that fails validation is refused and the
   * old one serves. Calls during a reload coalesce into one more.
   */
  reload(cause: string): Promise<ReloadResult>;
  /** SIGTERM semantics: not ready at once, serve `delay_s`, stop accepting, finish in-flight. */
  drain(): Promise<void>;
  /** Closes everything at once. */
  close(): Promise<void>;
  /** Null when ready to serve, else why not (draining, upstream not healthy). */
  notReadyBecause(): string | null;
}

/**
 * The composition root of a running gateway: config → generation → listeners, reloads and drain.
 * `leadgate serve` and the integration tests both start the gateway through this.
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const logger = options.logger ?? createLogger();
  const env = options.env ?? process.env;
  const config = options.config ?? loadConfig(options.configPath, { env });
  if (config.warnings.length > 0) {
    logger.warn(
      { warnings: config.warnings.map(formatProblem) },
      'config warnings (leadgate check lists them with lines)',
    );
  }
  const sink = sinkOf(logger);
  const lifecycle: Lifecycle = serving();
  const metrics = createMetrics({
    logLinesDropped: () => sink.dropped,
    ready: () => notReadyBecause() === null,
  });
  const agent = upstreamAgent(config);
  const revocations =
    options.revocations ?? startRevocations(config.state, { logger, registry: metrics.registry });
  const shared: SharedDeps = {
    agent,
    stores: openStateStore(config, { metrics, logger, remote: options.remoteStore }),
    revocations,
    metrics,
    logger,
  };
  // A store that is up answers from the first request; one that is down does not hold the start
  // (nor does a revocation set that cannot be loaded: the gateway serves with none, and says so).
  const [reached] = await Promise.all([
    Promise.race([shared.stores.store.ready.then(() => true), sleep(STORE_WAIT_MS).then(() => false)]),
    Promise.race([revocations.loaded, sleep(STORE_WAIT_MS)]),
  ]);
  if (!reached) {
    logger.warn(
      { component: 'state', store: shared.stores.store.kind },
      'state store not reachable at start: serving; single use and rate limits follow on_store_error until it answers',
    );
  }
  const live = { generation: buildGeneration(config, shared) };
  const effects = createConfigEffects(metrics, agent, logger);
  effects.apply(config);
  const notReadyBecause = () => {
    if (lifecycle.draining) return 'draining';
    return effects.upstreamHealthy() ? null : 'upstream not healthy';
  };

  const current = () => live.generation;
  const requestLog = createRequestLog(logger);
  const deps: HandlerDeps = {
    current,
    forwarder: await createForwarder(config.upstream, agent),
    metrics,
    logger,
    requestLog,
    guard: newGuard(config, { metrics, requestLog, current }),
    bodies: new BodyWatch(() => metrics.connectionBounds.inc({ bound: 'body_rate' })),
    lifecycle,
    inflight: metrics.inflight,
    tracer: await startTracing(config.tracing, env, logger),
    now: options.now,
  };
  const listeners = await openListeners(
    config,
    deps,
    options.adminListener === false ? null : { notReadyBecause },
  ).catch(async (err: unknown) => {
    effects.stop();
    deps.forwarder.close();
    agent.destroy();
    live.generation.resolver.close();
    revocations.close();
    await shared.stores.store.close();
    await deps.tracer?.shutdown().catch(() => {});
    throw err;
  });

  const reloading = startReloading(options, env, { shared, live, effects });

  const closeAll = async () => {
    reloading.stop();
    effects.stop();
    await listeners.close();
    deps.forwarder.close();
    agent.destroy();
    live.generation.resolver.close();
    revocations.close();
    await shared.stores.store.close();
    // Spans still buffered leave now, within a bound: an unreachable collector does not hold the exit.
    if (deps.tracer !== null) {
      await Promise.race([deps.tracer.shutdown().catch(() => {}), sleep(TRACE_FLUSH_MS)]);
    }
  };
  let draining: Promise<void> | null = null;
  return {
    ...listeners.ports,
    metrics,
    config: () => live.generation.config,
    reload: reloading.reload,
    notReadyBecause,
    drain() {
      draining ??= drainGateway(live.generation.config.shutdown, {
        lifecycle,
        logger,
        inflight: metrics.inflight,
        listeners,
        closeAll,
      });
      return draining;
    },
    close: closeAll,
  };
}

/**
 * Reloads (CONTRACT §7): on a watched file's change (unless `watch` is false) or when asked; a
 * new generation is built off to the side and swapped in one assignment.
 */
function startReloading(
  options: GatewayOptions,
  env: NodeJS.ProcessEnv,
  ctx: {
    shared: SharedDeps;
    live: { generation: Generation };
    effects: ReturnType<typeof createConfigEffects>;
  },
) {
  const { shared, live, effects } = ctx;
  const { metrics, logger } = shared;
  let watcher: ConfigWatcher | null = null;
  const apply = (next: Config) => {
    const previous = live.generation;
    live.generation = buildGeneration(next, shared);
    previous.resolver.close();
    watcher?.update(next.watchedFiles);
    effects.apply(next);
    if (restartNeeded(previous.config, next)) {
      logger.warn(
        'listen/admin/forward_auth addresses or their tls/proxy_protocol blocks, upstream.engine, tracing, state or workers changed: they take effect at the next restart',
      );
    }
  };
  const reloader = createConfigReloader({
    path: options.configPath,
    env,
    current: () => live.generation.config,
    apply,
    report: (r) => reportReload(r, metrics, logger),
  });
  const reload = (cause: string) => reloader.reload(cause);
  if (options.watch !== false) {
    watcher = createConfigWatcher(live.generation.config.watchedFiles, () => void reload('file'));
  }
  return { reload, stop: () => watcher?.close() };
}

function upstreamAgent(config: Config): http.Agent {
  return new http.Agent({
    keepAlive: true,
    maxSockets: config.upstream.maxSockets,
    maxFreeSockets: config.upstream.maxSockets,
    timeout: config.upstream.connectTimeoutMs,
    scheduling: 'lifo',
  });
}

function newGuard(
  config: Config,
  deps: Pick<HandlerDeps, 'metrics' | 'requestLog' | 'current'>,
): ConnectionGuard {
  const { metrics } = deps;
  return createConnectionGuard({
    lingerMs: Math.min(LINGER_MS, config.limits.requestTimeoutMs),
    maxPipelined: config.limits.maxPipelinedRequests,
    onClientError: (error, method) => closeOutClientError(error, method, deps.current(), deps),
    sendTimeoutMs: config.limits.sendTimeoutMs,
    onHold: () => metrics.connectionBounds.inc({ bound: 'pipeline' }),
    onSendTimeout: () => metrics.connectionBounds.inc({ bound: 'send_timeout' }),
  });
}

/** The listener's own bounds of `limits:`, each cut counted by its name. */
function connectionBounds(config: Config, metrics: Metrics): ConnectionBounds {
  return {
    maxConnections: config.limits.maxConnections,
    // longer than a legitimate request may wait for its upstream by default (upstream.timeout_ms)
    h2CloseGraceMs: config.limits.sendTimeoutMs,
    streamTimeoutMs: config.limits.sendTimeoutMs,
    onBound: (bound) => metrics.connectionBounds.inc({ bound }),
  };
}

/**
 * The effects of a config being applied (at start and on each reload): its metrics (hash, key
 * expiries, load time, the rate-limit series at 0) and the upstream probe.
 */
function createConfigEffects(metrics: Metrics, agent: http.Agent, logger: Logger) {
  let health: UpstreamHealth | null = null;
  // Every change of readiness the probe causes is a log line with its reason (/readyz says only that).
  const onChange = (healthy: boolean, reason: string) => {
    if (healthy) logger.info({ component: 'readiness', reason }, `ready: ${reason}`);
    else logger.warn({ component: 'readiness', reason }, `not ready: ${reason}`);
  };
  return {
    apply(c: Config) {
      metrics.configInfo.reset();
      metrics.configInfo.set({ hash: c.hash.slice(0, 16) }, 1);
      metrics.keyExpiry.reset();
      for (const [key, s] of c.keys.expiries()) metrics.keyExpiry.set({ key }, s);
      metrics.configLoaded.set(c.loadedAt.getTime() / 1000);
      zeroRateLimited(metrics.rateLimited, c.rateLimits.policies, c.keys.nameList());
      health?.stop();
      health =
        c.upstream.healthPath === null
          ? null
          : createUpstreamHealth(c.upstream.url, c.upstream.healthPath, agent, onChange);
    },
    upstreamHealthy: () => health === null || health.healthy(),
    stop: () => health?.stop(),
  };
}

interface Listeners {
  readonly api: Listener;
  readonly forwardAuth: Listener | null;
  readonly ports: Pick<Gateway, 'apiPort' | 'adminPort' | 'forwardAuthPort'>;
  close(): Promise<void>;
}

/** The API listener, the forward-auth one when configured, and admin unless a pool's primary serves it. */
async function openListeners(
  config: Config,
  deps: HandlerDeps,
  readiness: Readiness | null,
): Promise<Listeners> {
  const metrics = createListenerMetrics(deps.metrics.registry, [
    { name: 'api', tls: config.listen.tls !== null, proxyProtocol: config.listen.proxyProtocol !== null },
    ...(config.forwardAuth === null
      ? []
      : [
          {
            name: 'forward_auth' as const,
            tls: config.forwardAuth.listen.tls !== null,
            proxyProtocol: config.forwardAuth.listen.proxyProtocol !== null,
          },
        ]),
    ...(readiness === null
      ? []
      : [{ name: 'admin' as const, tls: config.admin.tls !== null, proxyProtocol: false }]),
  ]);
  const common = {
    metrics,
    h1: h1Options(config.limits),
    watch: (files: readonly string[], onChange: () => void) => createConfigWatcher(files, onChange),
    log: (level: 'info' | 'error', fields: Record<string, unknown>, message: string) =>
      deps.logger[level](fields, message),
  };
  const opened: Listener[] = [];
  const open = async (settings: ListenerSettings, rest: Omit<ListenerDeps, keyof typeof common>) => {
    const listener = await openListener(settings, { ...common, ...rest });
    opened.push(listener);
    return listener;
  };
  try {
    const api = await open(config.listen, {
      name: 'api',
      bounds: connectionBounds(config, deps.metrics),
      handler: createRequestHandler(deps),
      configure: apiEvents(config.limits, deps.guard),
    });
    const admin =
      readiness === null
        ? null
        : await open(config.admin, {
            name: 'admin',
            handler: createAdminHandler(deps.metrics.registry, readiness),
          });
    let forwardAuth: Listener | null = null;
    if (config.forwardAuth !== null) {
      const faGuard = newGuard(config, deps);
      forwardAuth = await open(config.forwardAuth.listen, {
        name: 'forward_auth',
        bounds: connectionBounds(config, deps.metrics),
        handler: createForwardAuthHandler({ ...deps, guard: faGuard }),
        configure: apiEvents(config.limits, faGuard),
      });
    }
    return {
      api,
      forwardAuth,
      ports: { apiPort: api.port, adminPort: admin?.port ?? 0, forwardAuthPort: forwardAuth?.port ?? null },
      async close() {
        await Promise.all(opened.map((l) => l.close()));
      },
    };
  } catch (err) {
    // One listener that cannot bind: none serves (the start fails as a whole).
    await Promise.all(opened.map((l) => l.close()));
    throw err;
  }
}

/** SIGTERM (CONTRACT §7): not ready at once, serve `delay_s`, stop accepting, finish in-flight, close. */
async function drainGateway(
  shutdown: Config['shutdown'],
  ctx: {
    lifecycle: Lifecycle;
    logger: Logger;
    inflight: { count: number };
    listeners: Listeners;
    closeAll: () => Promise<void>;
  },
): Promise<void> {
  const { lifecycle, logger, inflight, listeners } = ctx;
  startDrain(lifecycle, shutdown.delayS * 1000);
  logger.info(
    { delay_s: shutdown.delayS, timeout_s: shutdown.timeoutS },
    'draining: not ready; serving until the delay ends, closing kept-alive connections over its second half',
  );
  await sleep(shutdown.delayS * 1000);
  lifecycle.stopped = true;
  const open = [listeners.api, listeners.forwardAuth].filter((l) => l !== null);
  for (const listener of open) void listener.stopAccepting();
  logger.info({ inflight: inflight.count }, 'listener closed; finishing in-flight requests');
  // A connection is closed as soon as it is idle: its last answer has gone out.
  const finished = await waitUntil(() => {
    for (const listener of open) listener.closeIdle();
    return inflight.count === 0;
  }, shutdown.timeoutS * 1000);
  if (!finished) logger.warn({ inflight: inflight.count }, 'drain timeout: closing remaining connections');
  await ctx.closeAll();
}

/** Whether `next` changes what only a restart applies. */
function restartNeeded(previous: Config, next: Config): boolean {
  return (
    listenerText(next.listen) !== listenerText(previous.listen) ||
    listenerText(next.admin) !== listenerText(previous.admin) ||
    listenerText(next.forwardAuth?.listen) !== listenerText(previous.forwardAuth?.listen) ||
    next.upstream.engine !== previous.upstream.engine ||
    JSON.stringify(next.tracing) !== JSON.stringify(previous.tracing) ||
    JSON.stringify(next.state) !== JSON.stringify(previous.state) ||
    next.workers !== previous.workers
  );
}

/** A listener's settings as text, to tell a change (the address matcher by its ranges as written). */
function listenerText(l: ListenerSettings | undefined): string {
  return l === undefined
    ? ''
    : JSON.stringify({
        ...l,
        proxyProtocol:
          l.proxyProtocol === null ? null : [l.proxyProtocol.fromText, l.proxyProtocol.headerTimeoutMs],
      });
}

/** One log line per reload attempt, with its cause, result and duration; and the metrics. */
function reportReload(r: ReloadReport, metrics: Metrics, logger: Logger): void {
  metrics.reloads.inc({ result: r.result });
  metrics.reloadDuration.observe({ result: r.result }, r.seconds);
  const line = { cause: r.cause, result: r.result, duration_ms: Math.round(r.seconds * 1000) };
  if (r.result === 'failed') {
    logger.error(
      { ...line, problems: r.problems.map(formatProblem) },
      'config reload refused; the previous config keeps serving',
    );
  } else if (r.config !== null) {
    // `recovered`: the attempt before this one failed; this config is good again.
    const recovered = r.recovered ? { recovered: true } : {};
    const summary = { keys: r.config.keys.size, hash: r.config.hash.slice(0, 16) };
    logger.info({ ...line, ...recovered, ...summary }, 'config reloaded');
  } else {
    logger.info(line, 'config unchanged');
  }
}

/** The configured engine; http-proxy is imported only when chosen (see forward-http-proxy.ts). */
async function createForwarder(upstream: Config['upstream'], agent: http.Agent): Promise<Forwarder> {
  if (upstream.engine === 'undici') {
    return createUndiciForwarder({
      connections: upstream.maxSockets,
      connectTimeoutMs: upstream.connectTimeoutMs,
    });
  }
  const { createHttpProxyForwarder } = await import('./http/forward-http-proxy.js');
  return createHttpProxyForwarder(agent);
}

/** The longest the start waits for the state store's first connection. */
const STORE_WAIT_MS = 1_000;

/** The longest the exit waits for buffered spans to be exported. */
const TRACE_FLUSH_MS = 2_000;

/** How long a connection that is closed on the client mid-body may still take to read our answer. */
const LINGER_MS = 1_000;

/**
 * The API listeners' HTTP/1.1 limits: Node's parser limits are the contract's (header bytes,
 * timeouts).
 */
function h1Options(limits: Config['limits']): H1Options {
  return {
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, limits.headerTimeoutMs),
  };
}

/**
 * The API listener's events: a header count just above `max_header_count` so the handler can
 * refuse (Node would silently keep the first 2,000). Parser errors go through the connection
 * guard, which keeps answers in order. Expect: 100-continue reaches the handler, which continues
 * only once authenticated.
 */
function apiEvents(limits: Config['limits'], guard: ConnectionGuard) {
  return (server: HttpServer, handler: http.RequestListener) => {
    (server as http.Server).maxHeadersCount = limits.maxHeaderCount + 1;
    server.on('checkContinue', handler);
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => guard.clientError(err, socket));
    // HTTP/1.1: (req, socket, head); h2 (CONNECT on a stream): (req, the stream's response)
    server.on('connect', (req: http.IncomingMessage, target: Socket | http.ServerResponse) =>
      guard.refuseTunnel(req, target),
    );
  };
}
