import { openRedisLink, type RedisSettings } from '../store/index.js';
import { type RevocationStore, revocationKeys, revocationStore } from './store.js';
import type { Snapshot } from './types.js';

/** The store could not be reached (or kept failing) within the command's bound. */
export class StoreUnreachable extends Error {}

/** How long a command waits for the store, a Sentinel failover included. */
const DEADLINE_MS = 10_000;
const RETRY_MS = 200;
/** How long a command waits for the first connection to one Redis (with Sentinel: a failover's length). */
const CONNECT_MS = 3_000;

/**
 * The operator's side (`leadgate revoke`, `unrevoke`): one connection opened as the gateways open
 * theirs, `body` run with the store, each of its calls retried until the deadline (a failover
 * leaves a few seconds without a master), then the connection closed.
 */
export async function withRevocationStore<T>(
  redis: RedisSettings,
  body: (store: RevocationStore, retry: <R>(call: () => Promise<R>) => Promise<R>) => Promise<T>,
): Promise<T> {
  let last = 'no answer';
  const link = openRedisLink(redis, (reason) => {
    last = reason;
  });
  const deadline = Date.now() + DEADLINE_MS;
  const retry = async <R>(call: () => Promise<R>): Promise<R> => {
    for (;;) {
      try {
        return await bounded(call(), Math.max(redis.timeoutMs, 1_000));
      } catch (err) {
        last = err instanceof Error ? err.message.replace(/rediss?:\/\/\S*/g, 'redis://…') : last;
        if (Date.now() + RETRY_MS >= deadline) throw new StoreUnreachable(last);
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  };
  try {
    const connected = await Promise.race([
      link.ready.then(() => true),
      new Promise<boolean>((resolve) =>
        setTimeout(() => resolve(false), redis.target.kind === 'url' ? CONNECT_MS : DEADLINE_MS).unref(),
      ),
    ]);
    if (!connected) throw new StoreUnreachable(last);
    return await body(revocationStore(link, revocationKeys(redis.keyPrefix)), retry);
  } finally {
    link.close();
  }
}

function bounded<T>(call: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    call.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** How recently a gateway must have confirmed with the store to count as running. */
export const SEEN_WINDOW_MS = 10_000;

/**
 * Waits (at most `waitMs`) until every gateway seen in the last 10 s runs `version`; then says
 * how many do.
 */
export async function waitApplied(
  store: RevocationStore,
  version: string,
  waitMs: number,
): Promise<{ seen: number; applied: number }> {
  const until = Date.now() + waitMs;
  for (;;) {
    const counts = await store.applied(version, SEEN_WINDOW_MS);
    if (counts.applied >= counts.seen || Date.now() >= until) return counts;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What the store knows of the gateways: the count an operator under an incident wants. */
export function appliedSentence(counts: { seen: number; applied: number } | null): string {
  if (counts === null) return 'stored; the store stopped answering before the gateways could be counted';
  if (counts.seen === 0) return 'no gateway has synced with this store in the last 10 s';
  return `applied on ${counts.applied} of ${counts.seen} gateway(s) seen in the last 10 s`;
}

/** How long `--list` waits for a store without a set version to get one (a gateway writing its set back). */
const SETTLE_MS = 1_500;

/**
 * The set as stored; on a store without a version (it just began again empty), what a gateway
 * writes back within a sync or two, if one does within `SETTLE_MS`.
 */
export async function loadSettled(
  store: RevocationStore,
  retry: <R>(call: () => Promise<R>) => Promise<R>,
): Promise<Snapshot> {
  const until = Date.now() + SETTLE_MS;
  for (;;) {
    const snapshot = await retry(() => store.load());
    if (snapshot.version !== '' || Date.now() >= until) return snapshot;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
