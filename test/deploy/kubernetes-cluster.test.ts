import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Secret } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { runs } from '../helpers/optional.js';

/**
 * deploy/kubernetes/components/redis-cluster (CONTRACT §12): the base rendered with the component
 * by `kubectl kustomize`, and the gateway.yaml it ships loaded as leadgate loads it.
 */
const DIR = new URL('../../deploy/kubernetes/', import.meta.url);
const COMPONENT = new URL('components/redis-cluster/', DIR);
const hasKubectl = runs('kubectl', ['version', '--client']);
type Obj = { kind: string; metadata?: { name?: string } } & Record<string, unknown>;

const read = (dir: URL, f: string) => readFileSync(new URL(f, dir), 'utf8');
const docsOf = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as Obj);
const gatewayYaml = (o: Obj | undefined) =>
  (o as unknown as { data: Record<string, string> }).data['gateway.yaml'] ?? '';

describe('deploy/kubernetes/components/redis-cluster', () => {
  it('changes nothing of the base config but state.redis.cluster and single use, and leadgate loads it', () => {
    const component = docsOf(read(COMPONENT, 'kustomization.yaml'))[0] as unknown as {
      kind: string;
      resources: string[];
      patches: Array<{ path: string }>;
    };
    expect(component.kind).toBe('Component');
    const docs = [...component.resources, ...component.patches.map((p) => p.path)].flatMap((f) =>
      docsOf(read(COMPONENT, f)),
    );
    const secret = new Secret(docs.find((o) => o.kind === 'Secret') as never);
    secret.validate();
    const base = gatewayYaml(docsOf(read(DIR, 'configmap.yaml')).find((o) => o.kind === 'ConfigMap'));
    const patched = gatewayYaml(docs.find((o) => o.kind === 'ConfigMap'));
    const withoutState = patched.replace(
      /# Shared state on a Redis Cluster[\s\S]*?key_prefix: "leadgate:"\n/,
      '',
    );
    expect(withoutState).toBe(
      base.replace(
        'digest: { max_skew_s: 300 }',
        'digest: { max_skew_s: 300, single_use: true, on_store_error: deny }',
      ),
    );

    const files = mkdtempSync(join(tmpdir(), 'leadgate-k8s-cluster-'));
    const baseSecret = docsOf(read(DIR, 'secret.yaml')).find((o) => o.kind === 'Secret') as unknown as {
      stringData: Record<string, string>;
    };
    for (const [name, value] of Object.entries(baseSecret.stringData))
      writeFileSync(join(files, name), value);
    writeFileSync(join(files, 'gateway.yaml'), patched.replaceAll('/run/secrets/leadgate/', `${files}/`));
    const password = secret.stringData?.password ?? '';
    const config = loadConfig(join(files, 'gateway.yaml'), { env: { LEADGATE_REDIS_PASSWORD: password } });
    expect(config.state.redis?.target).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'leadgate-redis-cluster', port: 6379 }],
      tls: false,
    });
    expect(config.state.redis?.password).toBe(password);
    expect(config.digest.singleUse).toBe(true);
  });

  it.runIf(hasKubectl)(
    'renders with the base: the password reaches the leadgate sidecar, the config names the cluster',
    () => {
      const overlay = mkdtempSync(join(tmpdir(), 'leadgate-k8s-overlay-'));
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        `resources: [${relative(overlay, DIR.pathname)}]\ncomponents: [${relative(overlay, COMPONENT.pathname)}]\n`,
      );
      const rendered = docsOf(execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' }));
      const app = rendered.find((o) => o.kind === 'Deployment') as unknown as {
        spec: {
          template: { spec: { initContainers: Array<{ name: string; env?: Array<{ name: string }> }> } };
        };
      };
      const leadgate = app.spec.template.spec.initContainers.find((c) => c.name === 'leadgate');
      expect(leadgate?.env?.map((e) => e.name)).toContain('LEADGATE_REDIS_PASSWORD');
      const config = gatewayYaml(
        rendered.find((o) => o.kind === 'ConfigMap' && o.metadata?.name?.startsWith('leadgate-config')),
      );
      expect(config).toContain('cluster: { nodes: ["leadgate-redis-cluster:6379"] }');
      expect(rendered.filter((o) => o.kind === 'Secret').map((o) => o.metadata?.name)).toContain(
        'leadgate-redis',
      );
    },
  );
});
