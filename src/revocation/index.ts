import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import type { Logger } from '../observability/log.js';
import { openRedisLink, type StoreSettings } from '../store/index.js';
import { isOurs } from '../store/messages.js';
import type { RevocationsHello, RevocationsPush } from './messages.js';
import { registerRevocationMetrics } from './metrics.js';
import { type Change, createRevocationSet, type RevocationSet } from './set.js';
import { revocationKeys, revocationStore } from './store.js';
import { startSync } from './sync.js';
import type { Revocation, RevocationCheck, Snapshot } from './types.js';

export type { RevocationsHello, RevocationsPush } from './messages.js';
export { registerRevocationMetrics } from './metrics.js';
export type { Revocation, RevocationCheck, Snapshot } from './types.js';

/**
 * Revocation (CONTRACT §9): the set in memory that the request path reads, kept current by the
 * process that holds it, from the state store or from a pool's primary.
 */
export interface Revocations extends RevocationCheck {
  /** Settles once a set is in force (never, while the store could not be read). */
  readonly loaded: Promise<void>;
  snapshot(): Snapshot | null;
  /** `listener` runs after each change is applied. */
  onChange(listener: (snapshot: Snapshot) => void): void;
  close(): void;
}

/** How often a gateway asks the store whether the set changed (docs/decisions/2026-11-28-revocation-propagation.md). */
export const SYNC_INTERVAL_MS = 250;

/** The shortest bound on a sync call (loading 10,000 entries takes longer than a rate-limit call). */
const MIN_SYNC_TIMEOUT_MS = 1_000;

/**
 * The set a gateway (or a pool's primary) syncs from `state.redis`, with its metrics on
 * `registry`; without `state.redis` there is nothing to revoke: an empty set, confirmed.
 */
export function startRevocations(
  state: StoreSettings,
  deps: { readonly logger: Logger; readonly registry: Registry },
): Revocations {
  const set = createRevocationSet();
  const listeners: ((snapshot: Snapshot) => void)[] = [];
  const redis = state.redis;
  if (redis === null) {
    set.apply({ version: 'none', entries: [] });
    registerRevocationMetrics(deps.registry, { counts: set.counts, syncAgeS: () => 0 });
    return view(set, Promise.resolve(), listeners, () => {});
  }
  const logger = deps.logger.child({ component: 'revocation' });
  let first = true;
  const counters: { reseeded(result: 'written' | 'found_written'): void } = { reseeded: () => {} };
  const link = openRedisLink(redis, (reason) => logger.debug({ reason }, 'redis connection error'));
  const sync = startSync({
    store: revocationStore(link, revocationKeys(redis.keyPrefix)),
    connected: link.ready,
    set,
    gateway: `${hostname()}/${process.pid}`,
    intervalMs: SYNC_INTERVAL_MS,
    timeoutMs: Math.max(redis.timeoutMs, MIN_SYNC_TIMEOUT_MS),
    events: {
      changed(snapshot, change) {
        logChange(logger, snapshot, change, first);
        first = false;
        for (const listener of listeners) listener(snapshot);
      },
      failed(reason, loadedBefore) {
        if (loadedBefore) {
          logger.warn(
            { reason },
            'revocation set not confirmed with the state store: applying the set last loaded',
          );
        } else {
          logger.error({ reason }, 'revocation set could not be loaded: serving with none; trying again');
        }
      },
      recovered: () => logger.info('revocation set confirmed with the state store again'),
      reseeded(held, written) {
        counters.reseeded(written ? 'written' : 'found_written');
        logReseed(logger, held, written);
      },
    },
  });
  counters.reseeded = registerRevocationMetrics(deps.registry, {
    counts: set.counts,
    syncAgeS: () => Math.max(0, (Date.now() - sync.confirmedAtMs()) / 1000),
  }).reseeded;
  return view(set, sync.loaded, listeners, () => {
    sync.stop();
    link.close();
  });
}

/** The worker's side of a channel to the pool's primary (`process` in a cluster worker). */
export interface RevocationChannel {
  send(message: RevocationsHello): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/**
 * In a worker pool: the primary syncs the pod's one set and pushes it whole on each change; a
 * worker asks for it as it starts and applies what it is sent.
 */
export function receiveRevocations(channel: RevocationChannel): Revocations {
  const set = createRevocationSet();
  const listeners: ((snapshot: Snapshot) => void)[] = [];
  let markLoaded: () => void = () => {};
  const loaded = new Promise<void>((resolve) => {
    markLoaded = resolve;
  });
  channel.on('message', (message) => {
    if (!isOurs<RevocationsPush>(message) || message.leadgate !== 'revocations') return;
    set.apply(message.snapshot);
    markLoaded();
    for (const listener of listeners) listener(message.snapshot);
  });
  channel.send({ leadgate: 'revocations-hello' });
  return view(set, loaded, listeners, () => {});
}

/**
 * The primary's side: every change goes to all workers through `broadcast`; the returned function
 * is the answer to a worker's hello (null while no set was loaded: the first load is broadcast).
 */
export function shareRevocations(
  revocations: Revocations,
  broadcast: (message: RevocationsPush) => void,
): () => RevocationsPush | null {
  revocations.onChange((snapshot) => broadcast({ leadgate: 'revocations', snapshot }));
  return () => {
    const snapshot = revocations.snapshot();
    return snapshot === null ? null : { leadgate: 'revocations', snapshot };
  };
}

/** A lead id as logs show it: never the id itself. */
export function leadHash(leadId: string): string {
  return createHash('sha256').update(leadId).digest('hex').slice(0, 16);
}

/** The name a log line gives a revocation: a key's name, or a lead's hash. */
export function logName(r: Revocation): { key_name: string } | { lead_sha256: string } {
  return r.kind === 'key' ? { key_name: r.name } : { lead_sha256: leadHash(r.name) };
}

function logChange(logger: Logger, snapshot: Snapshot, change: Change, first: boolean): void {
  if (first) {
    const keys = snapshot.entries.filter((r) => r.kind === 'key').length;
    logger.info({ keys, leads: snapshot.entries.length - keys }, 'revocation set loaded');
    if (change.added.length > LOG_EACH_AT_LOAD) return;
  }
  for (const r of change.added) {
    logger.info(
      { ...logName(r), kind: r.kind, by: r.by, at: new Date(r.atMs).toISOString() },
      'revocation applied',
    );
  }
  for (const r of change.removed) {
    logger.info({ ...logName(r), kind: r.kind }, 'revocation lifted');
  }
}

/**
 * One line per time the store began again: what this gateway held (key names, lead hashes: the
 * first few of each) and whether it wrote them back or found a set another gateway wrote.
 */
function logReseed(logger: Logger, held: readonly Revocation[], written: boolean): void {
  const keys = held.filter((r) => r.kind === 'key');
  const leads = held.filter((r) => r.kind === 'lead');
  logger.warn(
    {
      keys: keys.length,
      leads: leads.length,
      key_names: keys.slice(0, LOG_EACH_AT_LOAD).map((r) => r.name),
      lead_sha256: leads.slice(0, LOG_EACH_AT_LOAD).map((r) => leadHash(r.name)),
      written,
    },
    written
      ? 'revocation store began again without the set: wrote back the set this gateway held'
      : 'revocation store began again without the set: another gateway already wrote one back; loading it',
  );
}

/** A first load names each revocation only when there are few (10,000 lines help no one). */
const LOG_EACH_AT_LOAD = 20;

function view(
  set: RevocationSet,
  loaded: Promise<void>,
  listeners: ((snapshot: Snapshot) => void)[],
  close: () => void,
): Revocations {
  return {
    isKeyRevoked: set.isKeyRevoked,
    isLeadTokenRevoked: set.isLeadTokenRevoked,
    loaded,
    snapshot: set.snapshot,
    onChange: (listener) => listeners.push(listener),
    close,
  };
}
