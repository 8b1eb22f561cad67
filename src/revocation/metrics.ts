import { Counter, Gauge, type Registry } from 'prom-client';

/** What the syncing process counts as it happens. */
export interface RevocationCounters {
  /** The store began again without the set held: `written` by this gateway, or found written. */
  reseeded(result: 'written' | 'found_written'): void;
}

/**
 * `leadgate_revocations{kind}` and `leadgate_revocation_sync_age_seconds`, read at each scrape,
 * and `leadgate_revocation_store_reseeds_total{result}`, both results present at 0,
 * registered by the process that syncs the set (a gateway, or a pool's primary: its workers only
 * receive the set, so the pool's sums count each revocation once).
 */
export function registerRevocationMetrics(
  registry: Registry,
  source: { counts(nowMs: number): { key: number; lead: number }; syncAgeS(): number },
): RevocationCounters {
  const reseeds = new Counter({
    name: 'leadgate_revocation_store_reseeds_total',
    help: 'Times the state store began again without the revocation set this gateway held (result: written back by this gateway | found_written by another)',
    labelNames: ['result'],
    registers: [registry],
  });
  reseeds.inc({ result: 'written' }, 0);
  reseeds.inc({ result: 'found_written' }, 0);
  new Gauge({
    name: 'leadgate_revocations',
    help: 'Revocations in force in this gateway, by kind (key | lead)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const counts = source.counts(Date.now());
      this.set({ kind: 'key' }, counts.key);
      this.set({ kind: 'lead' }, counts.lead);
    },
  });
  new Gauge({
    name: 'leadgate_revocation_sync_age_seconds',
    help: 'Seconds since this gateway last confirmed its revocation set with the state store (0 without state.redis)',
    registers: [registry],
    collect() {
      this.set(source.syncAgeS());
    },
  });
  return { reseeded: (result) => reseeds.inc({ result }) };
}
