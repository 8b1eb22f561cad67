import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as NodeRedis from '@redis/client';

/**
 * node-redis, loaded when a store first needs it: a gateway without `state.redis` never pays for
 * loading it at start (a fifth of the modules' start-up).
 */
export function nodeRedis(): typeof NodeRedis {
  return createRequire(import.meta.url)('@redis/client') as typeof NodeRedis;
}

/** A Lua script, sent by its SHA1 and loaded on the first NOSCRIPT (a new or restarted server). */
export interface Script {
  readonly text: string;
  readonly sha: string;
}

export function script(text: string): Script {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

/**
 * The one connection a gateway process keeps to its Redis master: a plain URL (store/redis-url)
 * or the master Sentinel names now (store/sentinel.ts). Calls fail at once while no master is
 * connected (guarded.ts decides what that means).
 */
export interface RedisLink {
  /** Settles once connected; stays pending while the first connect fails (it keeps trying). */
  readonly ready: Promise<void>;
  run(script: Script, keys: string[], args: string[]): Promise<unknown>;
  /**
   * `listener` runs, synchronously, whenever calls may from now on reach another server or a
   * server that began again (a reconnect, a new master), before any call can reach it.
   */
  onNewServer(listener: () => void): void;
  /** `listener` runs when a connection is ready for calls again (after a reconnect, a failover). */
  onReady(listener: () => void): void;
  close(): void;
  /** A Redis Cluster (store/cluster.ts): calls go to the master serving their keys' slot. */
  readonly cluster?: true;
  /** A Redis Cluster: the address of the master serving `key`'s slot now ('' when unknown). */
  shardOf?(key: string): string;
}

/** What every Redis link runs with. */
export interface LinkOptions {
  readonly password: string | undefined;
  readonly connectTimeoutMs: number;
  /** Connection errors (the link reconnects by itself). */
  readonly onError: (reason: string) => void;
}

/** Reconnect after 50 ms, doubling up to 1 s. */
export const reconnectStrategy = (retries: number) => Math.min(50 * 2 ** retries, 1_000);

/** EVALSHA, then EVAL on NOSCRIPT: the script cache is empty on a new or restarted server. */
export async function runScript(
  client: {
    evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
    eval(text: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  },
  s: Script,
  keys: string[],
  args: string[],
): Promise<unknown> {
  const options = { keys, arguments: args };
  try {
    return await client.evalSha(s.sha, options);
  } catch (err) {
    if (!reasonOf(err).startsWith('NOSCRIPT')) throw err;
    return client.eval(s.text, options);
  }
}

/** One Redis at `url`, through node-redis (`@redis/client`), reconnecting with backoff. */
export function linkToUrl(url: string, options: LinkOptions): RedisLink {
  const client = nodeRedis().createClient({
    url,
    ...(options.password === undefined ? {} : { password: options.password }),
    disableOfflineQueue: true,
    // guarded.ts bounds every call by timeout_ms; node-redis' own per-command AbortSignal timer
    // would cost ~1.5 µs per request on top (measured).
    commandOptions: { timeout: 0 },
    socket: { connectTimeout: options.connectTimeoutMs, reconnectStrategy },
  });
  client.on('error', (err: unknown) => options.onError(reasonOf(err)));
  const listeners: (() => void)[] = [];
  // 'connect' comes before the handshake and before any command can be sent on the new socket.
  client.on('connect', () => {
    for (const listener of listeners) listener();
  });
  const readyListeners: (() => void)[] = [];
  client.on('ready', () => {
    for (const listener of readyListeners) listener();
  });
  return {
    ready: settleOnce(client.connect(), options.onError),
    run: (s, keys, args) => runScript(client, s, keys, args),
    onNewServer: (listener) => listeners.push(listener),
    onReady: (listener) => readyListeners.push(listener),
    close() {
      try {
        client.destroy();
      } catch {
        // not connected
      }
    },
  };
}

/** Settles once connected; a first connect that fails leaves it pending (the client retries). */
export function settleOnce(connecting: Promise<unknown>, onError: (reason: string) => void): Promise<void> {
  return connecting.then(
    () => {},
    (err: unknown): Promise<void> => {
      onError(reasonOf(err));
      return new Promise(() => {});
    },
  );
}

/** An error's code or message, never a URL (it may hold a password). */
export function reasonOf(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code ?? err.message.replace(/rediss?:\/\/\S*/g, 'redis://…');
  }
  return 'unknown error';
}
