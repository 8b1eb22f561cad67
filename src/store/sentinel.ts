import {
  type LinkOptions,
  nodeRedis,
  type RedisLink,
  reasonOf,
  reconnectStrategy,
  runScript,
} from './link.js';

export interface SentinelSettings {
  /** The master's name in Sentinel (`sentinel monitor <name> …`). */
  readonly master: string;
  readonly nodes: readonly { readonly host: string; readonly port: number }[];
}

/** How long to wait before asking the sentinels again when none could name a master at start. */
const RETRY_CONNECT_MS = 1_000;

/**
 * Redis with Sentinel, through node-redis' `createSentinel`: every call goes to the master the
 * sentinels name now; on a failover (Sentinel's `+switch-master`) the link moves to the new master
 * without a restart. While no master answers, calls fail (guarded.ts applies `on_store_error`).
 * The password is the master's and replicas'; the sentinels are asked without one.
 */
export function linkToSentinel(settings: SentinelSettings, options: LinkOptions): RedisLink {
  const socket = { connectTimeout: options.connectTimeoutMs, reconnectStrategy };
  const sentinel = nodeRedis().createSentinel({
    name: settings.master,
    sentinelRootNodes: settings.nodes.map((n) => ({ host: n.host, port: n.port })),
    masterPoolSize: 1,
    commandOptions: { timeout: 0 },
    nodeClientOptions: {
      ...(options.password === undefined ? {} : { password: options.password }),
      disableOfflineQueue: true,
      socket,
    },
    sentinelClientOptions: { socket },
  });
  let closed = false;
  const listeners: (() => void)[] = [];
  const newServer = () => {
    for (const listener of listeners) listener();
  };
  sentinel.on('error', (err: unknown) => options.onError(reasonOf(err)));
  sentinel.on('client-error', (event: { error?: unknown }) => options.onError(reasonOf(event.error)));
  // Emitted as the new master's client is created, before any command can reach it.
  sentinel.on('topology-change', (event: { type: string }) => {
    if (event.type === 'MASTER_CHANGE') newServer();
  });
  sentinel.on('reconnecting', newServer);
  const readyListeners: (() => void)[] = [];
  sentinel.on('ready', () => {
    for (const listener of readyListeners) listener();
  });

  const connect = async (): Promise<void> => {
    for (;;) {
      try {
        await sentinel.connect();
        return;
      } catch (err) {
        options.onError(reasonOf(err));
        if (closed) return new Promise(() => {});
        await new Promise((resolve) => setTimeout(resolve, RETRY_CONNECT_MS).unref());
      }
    }
  };
  return {
    ready: connect(),
    run: (s, keys, args) => runScript(sentinel, s, keys, args),
    onNewServer: (listener) => listeners.push(listener),
    onReady: (listener) => readyListeners.push(listener),
    close() {
      closed = true;
      sentinel.destroy().catch(() => {});
    },
  };
}
