import { reasonOf } from '../store/index.js';
import type { Change, RevocationSet } from './set.js';
import { type RevocationStore, storeBeganAgain } from './store.js';
import type { Revocation, Snapshot } from './types.js';

export interface SyncEvents {
  /** A new snapshot was applied (the first one included). */
  changed(snapshot: Snapshot, change: Change): void;
  /** The store could not be asked (once per outage, with whether a set was ever loaded). */
  failed(reason: string, loadedBefore: boolean): void;
  /** The store answers again after `failed`. */
  recovered(): void;
  /**
   * The store began again without the set this gateway held (`held`: its entries still in
   * force); `written`: this gateway wrote them back, else another had already written a set.
   */
  reseeded(held: readonly Revocation[], written: boolean): void;
}

export interface Sync {
  /** Settles once the set was loaded from the store the first time. */
  readonly loaded: Promise<void>;
  /** Unix ms of the last time the store confirmed the set in memory (the start, before any). */
  confirmedAtMs(): number;
  stop(): void;
}

/**
 * Keeps `set` current: every `intervalMs` one script reads the set's version (and records the
 * version this gateway runs, for `leadgate revoke`'s count); on a new version the set is read
 * whole and swapped in. A store that began again (its version gone, or counting from 1 again)
 * does not lift what the gateway holds: the gateway writes its set back first (the first gateway
 * to do so wins), then loads what the store holds. A call that fails or takes longer than `timeoutMs` leaves the set as it
 * was; the next tick tries again.
 */
export function startSync(options: {
  readonly store: RevocationStore;
  /** The connection's first connect: the first read waits for it (at most `timeoutMs`). */
  readonly connected: Promise<void>;
  readonly set: RevocationSet;
  readonly gateway: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly events: SyncEvents;
}): Sync {
  const { store, set, events } = options;
  let confirmed = Date.now();
  let failing = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let markLoaded: () => void = () => {};
  const loaded = new Promise<void>((resolve) => {
    markLoaded = resolve;
  });

  const bounded = <T>(call: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('timed out')), options.timeoutMs);
      call.then(
        (value) => {
          clearTimeout(t);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(t);
          reject(err);
        },
      );
    });

  const tick = async () => {
    try {
      const held = set.snapshot();
      const applied = held?.version ?? '';
      const { version, nowMs } = await bounded(store.poll(options.gateway, applied));
      if (held !== null && storeBeganAgain(applied, version)) {
        const live = held.entries.filter((r) => r.untilMs === null || r.untilMs > nowMs);
        if (live.length > 0) {
          const healed = await bounded(store.heal(version, { version: applied, entries: live }));
          events.reseeded(live, healed.written);
        }
      }
      if (held === null || version !== applied) {
        const snapshot = await bounded(store.load());
        events.changed(snapshot, set.apply(snapshot));
        markLoaded();
      }
      confirmed = Date.now();
      if (failing) {
        failing = false;
        events.recovered();
      }
    } catch (err) {
      if (!failing) {
        failing = true;
        events.failed(reasonOf(err), set.snapshot() !== null);
      }
    }
  };
  const loop = async () => {
    if (stopped) return;
    await tick();
    if (!stopped) timer = setTimeout(() => void loop(), options.intervalMs).unref();
  };
  let started = false;
  const begin = () => {
    if (started) return;
    started = true;
    clearTimeout(first);
    void loop();
  };
  const first = setTimeout(begin, options.timeoutMs).unref();
  void options.connected.then(begin);
  return {
    loaded,
    confirmedAtMs: () => confirmed,
    stop() {
      stopped = true;
      clearTimeout(first);
      clearTimeout(timer);
    },
  };
}
