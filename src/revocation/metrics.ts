import { Gauge, type Registry } from 'prom-client';

/**
 * `leadgate_revocations{kind}` and `leadgate_revocation_sync_age_seconds`, read at each scrape,
 * registered by the process that syncs the set (a gateway, or a pool's primary: its workers only
 * receive the set, so the pool's sums count each revocation once).
 */
export function registerRevocationMetrics(
  registry: Registry,
  source: { counts(nowMs: number): { key: number; lead: number }; syncAgeS(): number },
): void {
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
}
