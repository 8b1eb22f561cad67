import { createRequire } from 'node:module';
import {
  type LinkOptions,
  nodeRedis,
  type RedisLink,
  reasonOf,
  reconnectStrategy,
  runScript,
  type Script,
} from './link.js';

export interface ClusterSettings {
  /** Seed nodes: any one that answers is enough; the others are learnt from it. */
  readonly nodes: readonly { readonly host: string; readonly port: number }[];
  /** TLS to every node, each verified by the name or address the cluster announces for it. */
  readonly tls: boolean;
}

/** A link to a Redis Cluster: every call goes to the master serving its keys' slot now. */
export interface ClusterLink extends RedisLink {
  readonly cluster: true;
  shardOf(key: string): string;
}

/**
 * How often the slot map is asked for again while a master does not answer (a failover under
 * way). @redis/client 6.3.1 waits 5 s from the first reconnect attempt before it asks (measured:
 * commands to a killed master's slots failed until ~5.4 s after the kill, though the cluster had
 * promoted its replica in ~2 s).
 */
export const REFRESH_WHILE_DOWN_MS = 250;
/** At most this often after the client failed to route a call (a slot map with holes). */
const REFRESH_AFTER_HOLE_MS = 250;
/** How long to wait before asking the seed nodes again when none answered. */
const RETRY_CONNECT_MS = 1_000;
/** TRYAGAIN (a script's keys split by a slot migration under way): retries, this far apart. */
const TRYAGAIN_RETRIES = 3;
const TRYAGAIN_WAIT_MS = 5;

type CalculateSlot = (key: string) => number;
let slotOf: CalculateSlot | null = null;
/** The hash slot of `key`, as the client computes it (hash tags included). */
export function keySlot(key: string): number {
  slotOf ??= (
    createRequire(import.meta.url)('@redis/client/dist/lib/utils/calculate-slot') as {
      default: CalculateSlot;
    }
  ).default;
  return slotOf(key);
}

/**
 * Redis Cluster through @redis/client's `createCluster`: `MOVED` and `ASK` are followed by the
 * client, which refreshes its slot map on `MOVED`. Two of its failures are handled here:
 * - while a master does not answer, the slot map is asked for every 250 ms (not after 5 s), and a
 *   changed map is announced (`onNewServer`, `onReady`): the breaker probes at once;
 * - a client that connected while the cluster was forming keeps a slot map with holes and fails
 *   every call to them with a TypeError ("reading 'master'") forever: such a call asks for the
 *   slot map again and fails as the store being unavailable.
 */
export function linkToCluster(settings: ClusterSettings, options: LinkOptions): ClusterLink {
  const socket = {
    connectTimeout: options.connectTimeoutMs,
    reconnectStrategy,
    ...(settings.tls ? { tls: true as const } : {}),
  };
  const client = nodeRedis().createCluster({
    rootNodes: settings.nodes.map((n) => ({ socket: { host: n.host, port: n.port } })),
    defaults: {
      ...(options.password === undefined ? {} : { password: options.password }),
      disableOfflineQueue: true,
      socket,
    },
    commandOptions: { timeout: 0 },
    topologyRefreshOnReconnectionAttemptStrategy: REFRESH_WHILE_DOWN_MS,
  });
  let closed = false;
  const newServer: (() => void)[] = [];
  const ready: (() => void)[] = [];
  const announce = () => {
    for (const listener of newServer) listener();
    for (const listener of ready) listener();
  };

  /** Which master serves each slot range, as one string: a change is a failover or a resharding. */
  const mapOf = () => client.masters.map((m) => m.address).join(',');
  let known = '';
  const noteMap = () => {
    const now = mapOf();
    if (now === known) return;
    known = now;
    announce();
  };
  let refreshing: Promise<void> | null = null;
  let lastRefresh = 0;
  const refresh = () => {
    if (closed || refreshing !== null) return;
    lastRefresh = Date.now();
    refreshing = client._slots
      .rediscover(undefined)
      .catch((err: unknown) => options.onError(reasonOf(err)))
      .finally(() => {
        refreshing = null;
        noteMap();
      });
  };

  const down = new Set<string>();
  const poll = setInterval(() => {
    if (down.size > 0) refresh();
  }, REFRESH_WHILE_DOWN_MS);
  poll.unref();

  client.on('error', (err: unknown) => options.onError(reasonOf(err)));
  client.on('node-error', (err: unknown) => options.onError(reasonOf(err)));
  client.on('node-reconnecting', (node: { host: string; port: number }) => {
    down.add(`${node.host}:${node.port}`);
  });
  client.on('node-disconnect', (node: { host: string; port: number }) => {
    down.add(`${node.host}:${node.port}`);
  });
  client.on('node-connect', () => {
    // A node's connection began again (maybe a restarted server): claims re-read their markers.
    for (const listener of newServer) listener();
  });
  client.on('node-ready', (node: { host: string; port: number }) => {
    down.delete(`${node.host}:${node.port}`);
    for (const listener of ready) listener();
  });
  // Drop addresses no longer in the slot map (a failed master removed from it).
  const prune = setInterval(() => {
    for (const address of down) if (!client.nodeByAddress.has(address)) down.delete(address);
  }, 1_000);
  prune.unref();

  // No node answered (down, or refused our TLS): ask again every second until one does. The
  // timer is not unref'd: like a reconnecting socket, it keeps a starting process alive.
  let retry: NodeJS.Timeout | null = null;
  const connect = async (): Promise<void> => {
    for (;;) {
      try {
        await client.connect();
        known = mapOf();
        return;
      } catch (err) {
        options.onError(reasonOf(err));
        if (closed) return new Promise(() => {});
        await new Promise((resolve) => {
          retry = setTimeout(resolve, RETRY_CONNECT_MS);
        });
        if (closed) return new Promise(() => {});
      }
    }
  };

  async function run(s: Script, keys: string[], args: string[]): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await runScript(client, s, keys, args);
      } catch (err) {
        if (err instanceof TypeError) {
          // The client has no master for this slot (a map learnt while the cluster was forming).
          if (Date.now() - lastRefresh >= REFRESH_AFTER_HOLE_MS) refresh();
          throw new Error('no master known for this slot yet');
        }
        if (attempt < TRYAGAIN_RETRIES && reasonOf(err).startsWith('TRYAGAIN')) {
          await new Promise((resolve) => setTimeout(resolve, TRYAGAIN_WAIT_MS));
          continue;
        }
        throw err;
      }
    }
  }

  return {
    cluster: true,
    ready: connect(),
    run,
    shardOf(key) {
      return client.slots[keySlot(key)]?.master.address ?? '';
    },
    onNewServer: (listener) => newServer.push(listener),
    onReady: (listener) => ready.push(listener),
    close() {
      closed = true;
      if (retry !== null) clearTimeout(retry);
      clearInterval(poll);
      clearInterval(prune);
      try {
        client.destroy();
      } catch {
        // never connected
      }
    },
  };
}
