import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makePki } from '../helpers/certs.js';
import { ask } from '../helpers/client.js';
import { digestLookup, KEYS, keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires } from '../helpers/optional.js';
import { hasPrometheus, startPrometheus, type TestPrometheus } from '../helpers/prometheus.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const MONITORING = new URL('../../deploy/monitoring/', import.meta.url).pathname;
const RULES = `${MONITORING}leadgate-rules.yaml`;

interface Rule {
  alert: string;
  expr: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface Panel {
  title: string;
  datasource: { uid: string };
  targets: Array<{ expr: string; datasource: { uid: string } }>;
}
const groups = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups;
const rules = groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(readFileSync(`${MONITORING}grafana-dashboard.json`, 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown }> };
};
/** A dashboard query as Grafana would send it for "all jobs" and a 30 s rate window. */
const concrete = (expr: string) => expr.replaceAll('$__rate_interval', '30s').replaceAll('$job', '.*');

describe('alert rules and dashboard (files)', () => {
  it('gives every alert a severity, a summary, a description and a runbook link that exists in docs/', () => {
    const runbooks = readFileSync(new URL('../../docs/guides/monitoring.md', import.meta.url), 'utf8');
    expect(rules.length).toBeGreaterThanOrEqual(10);
    for (const r of rules) {
      expect(['critical', 'warning']).toContain(r.labels.severity);
      expect(r.annotations.summary, r.alert).toBeTruthy();
      expect(r.annotations.description?.length ?? 0, r.alert).toBeGreaterThan(60);
      expect(r.annotations.runbook_url).toBe(`docs/guides/monitoring.md#${r.alert.toLowerCase()}`);
      expect(runbooks, r.alert).toContain(`### ${r.alert}`);
    }
  });

  it('ships the same groups as a PrometheusRule component', () => {
    const component = parse(
      readFileSync(
        new URL('../../deploy/kubernetes/components/prometheusrule/prometheusrule.yaml', import.meta.url),
        'utf8',
      ),
    ) as { kind: string; spec: { groups: unknown } };
    expect(component.kind).toBe('PrometheusRule');
    expect(component.spec.groups).toEqual(groups);
  });

  it('builds the dashboard on a datasource variable, every panel and query on it', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')?.type).toBe('datasource');
    for (const p of dashboard.panels) {
      expect(p.datasource.uid, p.title).toBe('${datasource}');
      for (const t of p.targets) expect(t.datasource.uid).toBe('${datasource}');
    }
  });
});

describe.runIf(requires('prometheus and promtool', hasPrometheus, 'Debian: apt-get install prometheus'))(
  'with the real Prometheus tools',
  () => {
    it('promtool check rules and promtool test rules pass (a firing and a silent case per alert)', () => {
      expect(execFileSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' })).toContain(
        `SUCCESS: ${rules.length} rules found`,
      );
      const tests = readFileSync(`${MONITORING}leadgate-rules.test.yaml`, 'utf8');
      for (const r of rules) expect(tests, r.alert).toContain(`alertname: ${r.alert}`);
      expect(
        execFileSync('promtool', ['test', 'rules', 'leadgate-rules.test.yaml'], {
          cwd: MONITORING,
          encoding: 'utf8',
        }),
      ).toContain('SUCCESS');
    });

    describe('a real Prometheus scraping a running leadgate under a little traffic', () => {
      let upstream: RecordingUpstream;
      let gw: Awaited<ReturnType<typeof startTestGateway>>;
      let prom: TestPrometheus;
      let names: Set<string>;
      beforeAll(async () => {
        upstream = await startRecordingUpstream();
        // a TLS listener, so the certificate-expiry alert has its metric
        const pair = makePki().server('monitoring');
        gw = await startTestGateway(
          writeConfig({
            upstream: upstream.url,
            keys: keysYaml().replace('name: server,', 'name: server, expires_at: "2031-01-01T00:00:00Z",'),
            extra:
              'rate_limits: { policies: [{ name: writers, by: key, limit: 2, window_s: 60, keys: [writer] }] }\n' +
              `forward_auth: { listen: { host: 127.0.0.1, port: 0, tls: { cert_file: ${pair.cert}, key_file: ${pair.key} } } }`,
          }),
        );
        prom = await startPrometheus([`127.0.0.1:${gw.adminPort}`], [RULES]);
        const traffic = async () => {
          await Promise.all([
            ask(gw.apiPort, {
              path: '/api/v2/merchant/orders',
              headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
            }),
            ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: { 'x-source': 'web' } }),
            ask(gw.apiPort, {
              path: '/api/v2/merchant/orders',
              headers: { 'x-apikey': KEYS.write.key, 'x-source': 'web' },
            }),
            ask(gw.apiPort, digestLookup()),
          ]);
        };
        // a few seconds of traffic, scraped every second
        for (let i = 0; i < 8; i++) {
          await traffic();
          await new Promise((r) => setTimeout(r, 500));
        }
        const all = await prom.api<string[]>('/api/v1/label/__name__/values');
        names = new Set(all.data);
      }, 30_000);
      afterAll(async () => {
        await prom?.stop();
        await gw?.close();
        await upstream?.close();
      });

      it('scrapes leadgate', async () => {
        const up = await prom.api<{ result: Array<{ value: [number, string] }> }>('/api/v1/query?query=up');
        expect(up.data.result[0]?.value[1]).toBe('1');
      });

      it('evaluates every alert and dashboard expression without error, over metric names that exist', async () => {
        const exprs = [
          ...rules.map((r) => ({ from: r.alert, expr: r.expr })),
          ...dashboard.panels.flatMap((p) =>
            p.targets.map((t) => ({ from: p.title, expr: concrete(t.expr) })),
          ),
        ];
        for (const { from, expr } of exprs) {
          const answer = await prom.api(`/api/v1/query?query=${encodeURIComponent(expr)}`);
          expect(answer.status, `${from}: ${answer.error ?? ''}`).toBe('success');
          for (const name of expr.match(/\bleadgate_[a-z_]+/g) ?? [])
            expect(names.has(name), `${from}: ${name}`).toBe(true);
        }
      });

      it('loads every rule, and every rule evaluates healthy', async () => {
        let loaded: Array<{ name: string; health: string; lastError?: string }> = [];
        for (let i = 0; i < 40; i++) {
          const r = await prom.api<{ groups: Array<{ rules: typeof loaded }> }>('/api/v1/rules');
          loaded = r.data.groups.flatMap((g) => g.rules);
          if (loaded.length === rules.length && loaded.every((x) => x.health === 'ok')) break;
          await new Promise((res) => setTimeout(res, 250));
        }
        expect(loaded.map((x) => x.name).sort()).toEqual(rules.map((x) => x.alert).sort());
        expect(loaded.filter((x) => x.health !== 'ok')).toEqual([]);
      });
    });
  },
);
