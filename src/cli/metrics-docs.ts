import type { Registry } from 'prom-client';
import { createListenerMetrics } from '../listener/index.js';
import { createMetrics } from '../observability/metrics.js';
import { registerRevocationMetrics } from '../revocation/index.js';
import { poolMetrics } from '../workers/primary.js';

/** One row of the metrics reference: what the code's registries hold. */
export interface MetricRow {
  readonly name: string;
  readonly type: string;
  readonly labels: readonly string[];
  readonly help: string;
  /** Only on a worker pool's primary (`workers` above 1). */
  readonly poolOnly: boolean;
}

/** Every `leadgate_*` metric a gateway's registry and a pool's registry define, in their order. */
export async function metricRows(): Promise<MetricRow[]> {
  const gateway = createMetrics({ logLinesDropped: () => 0, ready: () => true }).registry;
  // The listeners' own metrics join the gateway's registry when its listeners open.
  createListenerMetrics(gateway, []);
  // So do the revocation set's, where the process syncs it (a gateway, or a pool's primary).
  registerRevocationMetrics(gateway, { counts: () => ({ key: 0, lead: 0 }), syncAgeS: () => 0 });
  const pool = poolMetrics(2, () => 2).registry;
  return [...(await rowsOf(gateway, false)), ...(await rowsOf(pool, true))];
}

async function rowsOf(registry: Registry, poolOnly: boolean): Promise<MetricRow[]> {
  const rows: MetricRow[] = [];
  const byName = new Map(registry.getMetricsAsArray().map((m) => [m.name, m]));
  for (const json of await registry.getMetricsAsJSON()) {
    if (!json.name.startsWith('leadgate_')) continue;
    const declared = (byName.get(json.name) as { labelNames?: readonly string[] } | undefined)?.labelNames;
    // A metric that renders its own series (the fixed histograms) names its labels in them.
    const seen = json.values.flatMap((v) => Object.keys(v.labels ?? {})).filter((l) => l !== 'le');
    const labels = [...new Set(declared && declared.length > 0 ? declared : seen)];
    rows.push({ name: json.name, type: String(json.type), labels, help: json.help, poolOnly });
  }
  return rows;
}

/** docs/reference/metrics.md: `npm run schema` writes it from the registries; a test keeps it in step. */
export async function metricsMarkdown(): Promise<string> {
  const rows = (await metricRows()).map(
    (r) =>
      `| \`${r.name}\` | ${r.type} | ${r.labels.map((l) => `\`${l}\``).join(', ') || '—'} | ${r.help.replaceAll('|', '\\|')}${r.poolOnly ? ' (worker pools only)' : ''} |`,
  );
  return `# Metrics

Every metric leadgate exports on the admin port's \`/metrics\` (Prometheus text), for dashboards
and alerts. Generated from the code's own Prometheus registries by \`npm run schema\`; a test keeps
it in step, and fails when a page names a \`leadgate_*\` metric that is not here. Label values are
bounded: no label holds a path, an id or a credential. Counters whose label values are known
(results, ops) are present from the first scrape at 0. With \`workers\` above 1, the primary sums
the workers' series; the config hash, key expiries and the store's state are one value per pod.
What to alert on: [monitoring](../guides/monitoring.md).

| metric | type | labels | what it measures |
|---|---|---|---|
${rows.join('\n')}
| \`process_*\`, \`nodejs_*\` | | | prom-client's defaults: CPU, memory, event-loop lag, handles |
`;
}
