import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { IDENTITY_HEADERS } from '../../src/auth/header-names.js';
import { loadConfig } from '../../src/config/load.js';
import { runs } from '../helpers/optional.js';
import { runCli } from '../helpers/process.js';

const DIR = new URL('../../deploy/kubernetes/', import.meta.url);
type Obj = { kind: string; metadata?: { name?: string } } & Record<string, unknown>;
type MeshConfigDoc = Obj & {
  spec: {
    meshConfig: {
      extensionProviders: Array<{
        name: string;
        envoyExtAuthzHttp?: {
          port: number;
          includeRequestHeadersInCheck: string[];
          headersToUpstreamOnAllow: string[];
        };
      }>;
    };
  };
};

const hasKubectl = runs('kubectl', ['version', '--client']);

function listedFiles(): string[] {
  const k = parseAllDocuments(readFileSync(new URL('kustomization.yaml', DIR), 'utf8'))[0]?.toJS() as {
    resources?: string[];
  };
  return k.resources ?? [];
}

/** The objects `kubectl kustomize` renders, or, without kubectl, the files the kustomization lists. */
function objects(): Obj[] {
  const text = hasKubectl
    ? execFileSync('kubectl', ['kustomize', DIR.pathname], { encoding: 'utf8' })
    : listedFiles()
        .map((f) => readFileSync(new URL(f, DIR), 'utf8'))
        .join('\n---\n');
  return parseAllDocuments(text).map((d) => d.toJS() as Obj);
}

/** The leadgate container, native (an init container) or classic. */
function leadgateOf(deployment: Obj) {
  const pod = new Deployment(deployment as never).spec?.template.spec;
  return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].find((c) => c.name === 'leadgate');
}

/** The app's preStop sleep and the pod's grace period, in seconds. */
function timings(deployment: Obj) {
  const pod = new Deployment(deployment as never).spec?.template.spec;
  const app = pod?.containers.find((c) => c.name === 'app');
  return {
    preStop: app?.lifecycle?.preStop?.sleep?.seconds ?? 0,
    grace: pod?.terminationGracePeriodSeconds ?? 0,
  };
}

/** A shipped gateway.yaml, loaded as leadgate would, with the Secret's files beside it. */
function loadShipped(yaml: string, secrets: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-k8s-'));
  for (const [name, value] of Object.entries(secrets)) writeFileSync(join(dir, name), value);
  writeFileSync(join(dir, 'gateway.yaml'), yaml.replaceAll('/run/secrets/leadgate/', `${dir}/`));
  return loadConfig(join(dir, 'gateway.yaml'), { env: {} });
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  Deployment,
  Service,
  ConfigMap,
  Secret,
  PodDisruptionBudget,
};

describe(`deploy/kubernetes (${hasKubectl ? 'rendered by kubectl kustomize' : 'files; kubectl not installed'})`, () => {
  const all = objects();
  const byKind = (kind: string) =>
    all.find((o) => o.kind === kind && (kind !== 'Service' || o.metadata?.name === 'merchant-api')) as Obj;

  it('holds a Deployment, a Service, a ConfigMap, a Secret and a PodDisruptionBudget that validate against the Kubernetes schemas', () => {
    expect(all.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Secret',
      'Service',
      'Service',
    ]);
    for (const o of all) {
      const Model = MODELS[o.kind];
      expect(Model, o.kind).toBeDefined();
      if (Model) expect(() => new Model(o as never).validate(), o.kind).not.toThrow();
    }
  });

  it('runs leadgate as a hardened native sidecar with probes on the admin port, and the Service targets it', () => {
    const d = new Deployment(byKind('Deployment') as never);
    const pod = d.spec?.template.spec;
    const sidecar = leadgateOf(byKind('Deployment'));
    expect(pod?.containers.map((c) => c.name)).toEqual(['app']);
    expect(pod?.initContainers?.map((c) => [c.name, c.restartPolicy])).toEqual([['leadgate', 'Always']]);
    // the app starts once leadgate listens; /healthz does not wait for the app
    expect(sidecar?.startupProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'admin' });
    expect(sidecar?.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'admin' });
    expect(sidecar?.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'admin' });
    expect(sidecar?.ports?.find((p) => p.name === 'admin')?.containerPort).toBe(9090);
    for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(c.resources?.requests).toBeDefined();
      expect(c.resources?.limits).toBeDefined();
    }
    expect(pod?.securityContext?.runAsNonRoot).toBe(true);
    const svc = new Service(byKind('Service') as never);
    // by number: named ports of init containers reach a Service only from Kubernetes 1.32
    expect(svc.spec?.ports?.map((p) => p.targetPort)).toEqual(
      ['http', 'admin'].map((name) => sidecar?.ports?.find((p) => p.name === name)?.containerPort),
    );
    if (hasKubectl) expect(svc.spec?.selector).toEqual(d.spec?.selector.matchLabels);
  });

  it('ships a gateway config that leadgate accepts, an app preStop, and a grace period that covers the parts', () => {
    const cm = byKind('ConfigMap') as unknown as { data: Record<string, string> };
    const secret = byKind('Secret') as unknown as { stringData: Record<string, string> };
    const config = loadShipped(cm.data['gateway.yaml'] ?? '', secret.stringData);
    expect(config.keys.size).toBeGreaterThan(0);
    // native: leadgate is signalled after the app has exited, nothing is left to serve for
    expect(config.shutdown.delayS).toBe(0);
    const t = timings(byKind('Deployment'));
    expect(t.preStop).toBeGreaterThan(0);
    expect(t.grace).toBeGreaterThan(t.preStop + config.shutdown.timeoutS + config.shutdown.delayS);
    // secrets are referenced by file, never inlined in the ConfigMap
    for (const value of Object.values(secret.stringData))
      expect(cm.data['gateway.yaml']).not.toContain(value);
  });

  it('tolerates one slow probe, keeps one pod at most out on a drain, and says in each file what to change', () => {
    const sidecar = leadgateOf(byKind('Deployment'));
    expect(sidecar?.readinessProbe?.failureThreshold).toBeGreaterThanOrEqual(2);
    expect(sidecar?.livenessProbe?.failureThreshold).toBeGreaterThanOrEqual(2);
    const pdb = byKind('PodDisruptionBudget') as unknown as { spec: { maxUnavailable?: number } };
    expect(pdb.spec.maxUnavailable).toBe(1);
    for (const file of [...listedFiles(), 'kustomization.yaml'])
      expect(readFileSync(new URL(file, DIR), 'utf8'), file).toMatch(/#.*\bChange\b/);
  });

  it('offers a ServiceMonitor component that scrapes the Service admin port', () => {
    const dir = new URL('components/servicemonitor/', DIR);
    const component = parseAllDocuments(
      readFileSync(new URL('kustomization.yaml', dir), 'utf8'),
    )[0]?.toJS() as {
      kind: string;
      resources: string[];
    };
    expect(component.kind).toBe('Component');
    const sm = parseAllDocuments(
      readFileSync(new URL(component.resources[0] ?? '', dir), 'utf8'),
    )[0]?.toJS() as {
      kind: string;
      spec: { endpoints: Array<{ port: string; path: string }> };
    };
    expect(sm.kind).toBe('ServiceMonitor');
    const svc = new Service(byKind('Service') as never);
    const port = svc.spec?.ports?.find((p) => p.name === sm.spec.endpoints[0]?.port);
    expect(port?.targetPort).toBe(
      leadgateOf(byKind('Deployment'))?.ports?.find((p) => p.name === 'admin')?.containerPort,
    );
    expect(sm.spec.endpoints[0]?.path).toBe('/metrics');
  });

  it('offers a Redis component: Redis itself, its URL for the sidecar, and the same config with state.redis on', () => {
    const dir = new URL('components/redis/', DIR);
    const read = (f: string) => readFileSync(new URL(f, dir), 'utf8');
    const component = parseAllDocuments(read('kustomization.yaml'))[0]?.toJS() as {
      kind: string;
      resources: string[];
      patches: Array<{ path: string }>;
    };
    expect(component.kind).toBe('Component');
    const docs = [...component.resources, ...component.patches.map((p) => p.path)].flatMap((f) =>
      parseAllDocuments(read(f)).map((d) => d.toJS() as Obj),
    );
    const redis = new Deployment(
      docs.find((o) => o.kind === 'Deployment' && o.metadata?.name === 'leadgate-redis') as never,
    );
    redis.validate();
    expect(redis.spec?.template.spec?.containers[0]?.args).toContain('--requirepass');
    new Service(docs.find((o) => o.kind === 'Service') as never).validate();
    const secret = new Secret(docs.find((o) => o.kind === 'Secret') as never);
    secret.validate();
    // the component's gateway.yaml is the base one plus state.redis and single use, nothing else
    const base =
      (byKind('ConfigMap') as unknown as { data: Record<string, string> }).data['gateway.yaml'] ?? '';
    const patched = (docs.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> })
      .data['gateway.yaml'];
    const expected = base
      .replace(
        'workers: auto\n',
        'workers: auto\n# Shared state on Redis (components/redis): single use and rate limits across every replica.\nstate:\n  redis: { url: "${LEADGATE_REDIS_URL}", timeout_ms: 50, key_prefix: "leadgate:" }\n',
      )
      .replace(
        'digest: { max_skew_s: 300 }',
        'digest: { max_skew_s: 300, single_use: true, on_store_error: deny }',
      );
    expect(patched).toBe(expected);
    const files = mkdtempSync(join(tmpdir(), 'leadgate-k8s-redis-'));
    const secrets = (byKind('Secret') as unknown as { stringData: Record<string, string> }).stringData;
    for (const [name, value] of Object.entries(secrets)) writeFileSync(join(files, name), value);
    writeFileSync(
      join(files, 'gateway.yaml'),
      (patched ?? '').replaceAll('/run/secrets/leadgate/', `${files}/`),
    );
    const url = secret.stringData?.url ?? '';
    const config = loadConfig(join(files, 'gateway.yaml'), { env: { LEADGATE_REDIS_URL: url } });
    expect(config.state.redis?.target).toEqual({ kind: 'url', url });
    expect(config.digest.singleUse).toBe(true);
    expect(config.workers).toBe('auto');
    // the sidecar gets the URL from the Secret
    const env = docs.find(
      (o) => o.kind === 'Deployment' && o.metadata?.name === 'merchant-api',
    ) as unknown as {
      spec: { template: { spec: { initContainers: Array<{ name: string; env: Array<{ name: string }> }> } } };
    };
    expect(env.spec.template.spec.initContainers[0]?.name).toBe('leadgate');
    expect(env.spec.template.spec.initContainers[0]?.env[0]?.name).toBe('LEADGATE_REDIS_URL');
    if (hasKubectl) {
      const overlay = mkdtempSync(join(tmpdir(), 'leadgate-k8s-overlay-'));
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        `resources: [${relative(overlay, DIR.pathname)}]\ncomponents: [${relative(overlay, new URL('components/redis', DIR).pathname)}]\n`,
      );
      const rendered = execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' });
      expect(rendered).toContain('LEADGATE_REDIS_URL');
      expect(rendered).toContain('state:');
      expect(rendered).toContain('name: leadgate-redis');
    }
  });

  it('offers a Redis with Sentinel component: the password for the sidecar, and the same config with state.redis.sentinel on', () => {
    const dir = new URL('components/redis-sentinel/', DIR);
    const read = (f: string) => readFileSync(new URL(f, dir), 'utf8');
    const component = parseAllDocuments(read('kustomization.yaml'))[0]?.toJS() as {
      kind: string;
      resources: string[];
      patches: Array<{ path: string }>;
    };
    expect(component.kind).toBe('Component');
    const docs = [...component.resources, ...component.patches.map((p) => p.path)].flatMap((f) =>
      parseAllDocuments(read(f)).map((d) => d.toJS() as Obj),
    );
    const secret = new Secret(docs.find((o) => o.kind === 'Secret') as never);
    secret.validate();
    const base =
      (byKind('ConfigMap') as unknown as { data: Record<string, string> }).data['gateway.yaml'] ?? '';
    const patched =
      (docs.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data[
        'gateway.yaml'
      ] ?? '';
    // nothing but state.redis (and its comment) and single use differs from the base config
    const withoutState = patched.replace(
      /# Shared state on Redis with Sentinel[\s\S]*?key_prefix: "leadgate:"\n/,
      '',
    );
    expect(withoutState).toBe(
      base.replace(
        'digest: { max_skew_s: 300 }',
        'digest: { max_skew_s: 300, single_use: true, on_store_error: deny }',
      ),
    );
    const files = mkdtempSync(join(tmpdir(), 'leadgate-k8s-sentinel-'));
    const secrets = (byKind('Secret') as unknown as { stringData: Record<string, string> }).stringData;
    for (const [name, value] of Object.entries(secrets)) writeFileSync(join(files, name), value);
    writeFileSync(join(files, 'gateway.yaml'), patched.replaceAll('/run/secrets/leadgate/', `${files}/`));
    const password = secret.stringData?.password ?? '';
    const config = loadConfig(join(files, 'gateway.yaml'), { env: { LEADGATE_REDIS_PASSWORD: password } });
    expect(config.state.redis?.target).toEqual({
      kind: 'sentinel',
      master: 'mymaster',
      nodes: [{ host: 'leadgate-redis', port: 26379 }],
    });
    expect(config.state.redis?.password).toBe(password);
    expect(config.digest.singleUse).toBe(true);
    // the password goes to the leadgate sidecar (a native sidecar: an init container)
    const app = docs.find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { initContainers: Array<{ name: string; env: Array<{ name: string }> }> } } };
    };
    expect(app.spec.template.spec.initContainers[0]?.name).toBe('leadgate');
    expect(app.spec.template.spec.initContainers[0]?.env[0]?.name).toBe('LEADGATE_REDIS_PASSWORD');
    if (hasKubectl) {
      const overlay = mkdtempSync(join(tmpdir(), 'leadgate-k8s-overlay-'));
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        `resources: [${relative(overlay, DIR.pathname)}]\ncomponents: [${relative(overlay, dir.pathname)}]\n`,
      );
      const rendered = execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' });
      expect(rendered).toContain('LEADGATE_REDIS_PASSWORD');
      expect(rendered).toContain('sentinel: { master: mymaster');
    }
  });

  it('offers a classic-sidecar component: leadgate a plain container, delay_s, the app preStop and the grace period that go with it', () => {
    const dir = new URL('components/classic-sidecar/', DIR);
    const read = (f: string) => readFileSync(new URL(f, dir), 'utf8');
    const component = parseAllDocuments(read('kustomization.yaml'))[0]?.toJS() as { kind: string };
    expect(component.kind).toBe('Component');
    // its gateway.yaml is the base one with shutdown.delay_s 10, nothing else
    const base =
      (byKind('ConfigMap') as unknown as { data: Record<string, string> }).data['gateway.yaml'] ?? '';
    const patchDoc = parseAllDocuments(read('gateway-config.yaml'))[0]?.toJS() as
      | { data: Record<string, string> }
      | undefined;
    const patched = patchDoc?.data['gateway.yaml'] ?? '';
    const shutdownLines = (yaml: string) => yaml.split('\n').filter((l) => /^ *(#|shutdown:)/.test(l));
    const rest = (yaml: string) => yaml.split('\n').filter((l) => !/^ *(#|shutdown:)/.test(l));
    expect(rest(patched)).toEqual(rest(base));
    expect(shutdownLines(patched)).not.toEqual(shutdownLines(base));
    const secrets = (byKind('Secret') as unknown as { stringData: Record<string, string> }).stringData;
    const config = loadShipped(patched, secrets);
    expect(config.shutdown.delayS).toBe(10);
    if (!hasKubectl) return;
    const overlay = mkdtempSync(join(tmpdir(), 'leadgate-k8s-classic-'));
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      `resources: [${relative(overlay, DIR.pathname)}]\ncomponents: [${relative(overlay, dir.pathname)}]\n`,
    );
    const rendered = parseAllDocuments(
      execFileSync('kubectl', ['kustomize', overlay], { encoding: 'utf8' }),
    ).map((d) => d.toJS() as Obj);
    const deployment = rendered.find((o) => o.kind === 'Deployment') as Obj;
    const d = new Deployment(deployment as never);
    d.validate();
    const pod = d.spec?.template.spec;
    expect(pod?.containers.map((c) => [c.name, c.restartPolicy])).toEqual([
      ['app', undefined],
      ['leadgate', undefined],
    ]);
    expect(pod?.initContainers ?? []).toEqual([]);
    const cm = rendered.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> };
    expect(cm.data['gateway.yaml']).toBe(patched);
    // the app outlives leadgate's serving; the grace period covers the app's preStop and stop
    const t = timings(deployment);
    expect(t.preStop).toBeGreaterThan(config.shutdown.delayS);
    expect(t.grace).toBeGreaterThan(t.preStop + config.shutdown.timeoutS);
    expect(t.grace).toBeGreaterThan(config.shutdown.delayS + config.shutdown.timeoutS);
  });

  it('sizes workers: auto by the sidecar CPU limit', () => {
    const sidecar = leadgateOf(byKind('Deployment'));
    expect(sidecar?.resources?.limits?.cpu).toBe('2');
    const cm = byKind('ConfigMap') as unknown as { data: Record<string, string> };
    expect(cm.data['gateway.yaml']).toMatch(/^workers: auto$/m);
  });

  it("the Secret's placeholder values are warned about by check, and refused by check --strict", () => {
    const secret = byKind('Secret') as unknown as { stringData: Record<string, string> };
    const dir = mkdtempSync(join(tmpdir(), 'leadgate-k8s-'));
    const cm = byKind('ConfigMap') as unknown as { data: Record<string, string> };
    for (const [name, value] of Object.entries(secret.stringData)) writeFileSync(join(dir, name), value);
    writeFileSync(
      join(dir, 'gateway.yaml'),
      (cm.data['gateway.yaml'] ?? '').replaceAll('/run/secrets/leadgate/', `${dir}/`),
    );
    const config = loadConfig(join(dir, 'gateway.yaml'), { env: {} });
    expect(config.warnings.length).toBe(Object.keys(secret.stringData).length);
    const strict = runCli(['check', '--strict', '--config', join(dir, 'gateway.yaml')]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(/looks like a placeholder/);
  });

  it('offers the forward-auth listener as the leadgate-auth Service, on the port the config opens', () => {
    const svc = new Service(all.find((o) => o.metadata?.name === 'leadgate-auth') as never);
    svc.validate();
    const port = svc.spec?.ports?.[0];
    // leadgate is a native sidecar (an init container); the Service names its port by number
    const sidecar = leadgateOf(byKind('Deployment'));
    const target = sidecar?.ports?.find(
      (p) => p.name === port?.targetPort || p.containerPort === port?.targetPort,
    )?.containerPort;
    const cm = byKind('ConfigMap') as Obj & { data: Record<string, string> };
    const config = parseAllDocuments(cm.data['gateway.yaml'] ?? '')[0]?.toJS() as {
      forward_auth: { listen: { port: number } };
    };
    expect(target).toBe(config.forward_auth.listen.port);
  });

  it('ships the Istio provider the policy names: every client header to leadgate, its identity headers upstream', () => {
    const [operator] = parseAllDocuments(readFileSync(new URL('../istio/mesh-config.yaml', DIR), 'utf8')).map(
      (d) => d.toJS() as MeshConfigDoc,
    );
    const providers = operator?.spec.meshConfig.extensionProviders ?? [];
    const provider = providers.find((p) => p.name === 'leadgate')?.envoyExtAuthzHttp;
    expect(operator?.kind).toBe('IstioOperator');
    expect(provider?.port).toBe(8081);
    // leadgate sees every client header, so it can refuse a copy of an identity header in any spelling.
    expect(provider?.includeRequestHeadersInCheck).toEqual(['*']);
    // Envoy sets every identity header leadgate answers with (x-request-id stays Envoy's own).
    expect(new Set(provider?.headersToUpstreamOnAllow)).toEqual(
      new Set(IDENTITY_HEADERS.filter((h) => h !== 'x-request-id')),
    );
  });
});
