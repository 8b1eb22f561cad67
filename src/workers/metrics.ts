import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** A worker's metrics as its registry gives them (`getMetricsAsJSON`), sent over IPC. */
export type WorkerMetrics = ReadonlyArray<object>;

/** How long a scrape waits for a ready worker; past it the scrape fails (as prom-client's does). */
const ANSWER_MS = 5_000;

interface Waiting {
  readonly worker: Worker;
  readonly resolve: (metrics: WorkerMetrics | null) => void;
}

/**
 * The primary's side of `/metrics` in a pool: every *ready* worker is asked for its registry and
 * the answers are summed with prom-client's aggregator. prom-client's own `clusterMetrics` asks
 * every connected worker, so a scrape during a worker's (re)start waited for a process that was
 * still loading and could not answer, and failed after 5 s (a 500 just when a worker had died).
 * A worker that exits before answering is left out (its counts went with it); a ready worker that
 * does not answer in time fails the scrape rather than make the sums look like a counter reset.
 */
export function createPoolMetrics(send: (worker: Worker, id: number) => void) {
  let next = 0;
  const waiting = new Map<number, Waiting>();

  const ask = (worker: Worker): Promise<WorkerMetrics | null> =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('a worker did not send its metrics in time'));
      }, ANSWER_MS);
      const done = (metrics: WorkerMetrics | null) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(metrics);
      };
      waiting.set(id, { worker, resolve: done });
      send(worker, id);
    });

  return {
    /** The pool's metrics text: the ready workers' registries summed, then `own`. */
    async collect(ready: readonly Worker[], own: Registry): Promise<string> {
      const answers = await Promise.all(ready.map(ask));
      const summed = AggregatorRegistry.aggregate(answers.filter((a) => a !== null) as object[]);
      return `${await summed.metrics()}\n${await own.metrics()}`;
    },
    /** A worker's answer arrived. */
    answered(id: number, metrics: WorkerMetrics): void {
      waiting.get(id)?.resolve(metrics);
    },
    /** A worker exited: what it was asked is answered without it. */
    gone(worker: Worker): void {
      for (const w of [...waiting.values()]) if (w.worker === worker) w.resolve(null);
    },
  };
}
