import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { requires, runs } from '../helpers/optional.js';

/**
 * deploy/gateway-api/*: each overlay rendered by `kubectl kustomize`, as its header says to apply
 * it, and every reference resolved inside what it renders: a route's Gateway, each backendRef's
 * Service and port, that port's container port, the leadgate listener it reaches (from the
 * ConfigMap's gateway.yaml), and the header lists against the identity headers.
 */
const ROOT = new URL('../../deploy/', import.meta.url);
const IDENTITY = ['x-lead-id', 'x-api-key-name', 'x-api-key-access', 'x-api-key-purpose', 'x-request-id'];
const CREDENTIALS = ['x-apikey', 'x-leadtoken', 'x-leaddigest', 'x-source', 'x-timestamp', 'x-forwarded-for'];

type Obj = { kind: string; metadata: { name: string }; spec: Record<string, unknown> } & Record<
  string,
  unknown
>;
interface Port {
  name: string;
  port: number;
  targetPort: string | number;
}
interface BackendRef {
  name: string;
  port: number;
}

function render(dir: string): Obj[] {
  const text = execFileSync('kubectl', ['kustomize', new URL(dir, ROOT).pathname], { encoding: 'utf8' });
  return parseAllDocuments(text).map((d) => d.toJS() as Obj);
}

/** What a Service port reaches: the container and its port, in the rendered Deployment. */
function resolve(all: Obj[], ref: BackendRef): { container: string; port: number } {
  const svc = all.find((o) => o.kind === 'Service' && o.metadata.name === ref.name);
  expect(svc, `Service ${ref.name}`).toBeDefined();
  const port = ((svc?.spec.ports ?? []) as Port[]).find((p) => p.port === ref.port);
  expect(port, `${ref.name}:${ref.port}`).toBeDefined();
  const deployment = all.find((o) => o.kind === 'Deployment') as Obj;
  type Container = { name: string; ports?: Port[] };
  const pod = (
    deployment.spec.template as { spec: { containers: Container[]; initContainers?: Container[] } }
  ).spec;
  // leadgate runs as a native sidecar (an init container); a target port is a name or a number
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    const hit = (c.ports ?? []).find(
      (p) =>
        p.name === port?.targetPort ||
        (p as unknown as { containerPort: number }).containerPort === port?.targetPort,
    );
    if (hit) return { container: c.name, port: (hit as unknown as { containerPort: number }).containerPort };
  }
  throw new Error(`${ref.name}:${ref.port} targets no container port`);
}

/** leadgate's own config, as the rendered ConfigMap holds it. */
function gatewayConfig(all: Obj[]) {
  const cm = all.find((o) => o.kind === 'ConfigMap') as { data: Record<string, string> } & Obj;
  return parse(cm.data['gateway.yaml'] ?? '') as {
    listen: { port: number };
    forward_auth: { listen: { port: number } };
    upstream: { url: string };
  };
}

/** Each rule's backendRefs, checked against the Gateway, and returned by path prefix. */
function routes(all: Obj[]): Map<string, BackendRef> {
  const gateways = all.filter((o) => o.kind === 'Gateway').map((o) => o.metadata.name);
  const out = new Map<string, BackendRef>();
  for (const route of all.filter((o) => o.kind === 'HTTPRoute')) {
    const spec = route.spec as {
      parentRefs: Array<{ name: string }>;
      rules: Array<{ matches: Array<{ path: { value: string } }>; backendRefs: BackendRef[] }>;
    };
    for (const p of spec.parentRefs) expect(gateways).toContain(p.name);
    for (const rule of spec.rules) {
      expect(rule.backendRefs).toHaveLength(1);
      for (const m of rule.matches) out.set(m.path.value, rule.backendRefs[0] as BackendRef);
    }
  }
  return out;
}

interface MeshConfig {
  extensionProviders: Array<{
    name: string;
    envoyExtAuthzHttp: { service: string; port: number; headersToUpstreamOnAllow: string[] };
  }>;
}

/** Istio's mesh config for leadgate: deploy/istio/mesh-config.yaml, or the policy file's comment. */
function istioMeshConfig(): MeshConfig {
  const file = new URL('istio/mesh-config.yaml', ROOT);
  if (existsSync(file)) {
    return (parse(readFileSync(file, 'utf8')) as { spec: { meshConfig: MeshConfig } }).spec.meshConfig;
  }
  const text = readFileSync(new URL('istio/authorization-policy.yaml', ROOT), 'utf8');
  return parse(
    text
      .split('\n')
      .filter((l) => l.startsWith('#   ') || l.startsWith('#     '))
      .map((l) => l.slice(1))
      .join('\n'),
  ) as MeshConfig;
}

const hasKubectl = runs('kubectl', ['version', '--client']);

describe.runIf(requires('kubectl', hasKubectl, 'Debian: apt-get install kubectl'))(
  'deploy/gateway-api overlays, rendered by kubectl kustomize',
  () => {
    /** Forward-auth layout: the API to the app's own port, the lookup to leadgate's listener. */
    function expectForwardAuthRoutes(all: Obj[]) {
      const config = gatewayConfig(all);
      const r = routes(all);
      const api = resolve(all, r.get('/api/v2/merchant/') as BackendRef);
      expect(api).toEqual({ container: 'app', port: Number(new URL(config.upstream.url).port) });
      const lookup = resolve(all, r.get('/api/v2/merchant/leads/') as BackendRef);
      expect(lookup).toEqual({ container: 'leadgate', port: config.listen.port });
      return config;
    }

    it('Envoy Gateway: a SecurityPolicy on the API route asks leadgate-auth, copies exactly the identity headers', () => {
      const all = render('gateway-api/envoy-gateway/');
      const config = expectForwardAuthRoutes(all);
      const policy = all.find((o) => o.kind === 'SecurityPolicy') as Obj;
      const spec = policy.spec as {
        targetRefs: Array<{ kind: string; name: string }>;
        extAuth: {
          failOpen: boolean;
          headersToExtAuth: string[];
          http: { backendRefs: BackendRef[]; headersToBackend: string[] };
        };
      };
      expect(spec.targetRefs).toEqual([
        { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'merchant-api' },
      ]);
      const routed = all.find((o) => o.kind === 'HTTPRoute' && o.metadata.name === 'merchant-api') as Obj;
      const paths = (routed.spec.rules as Array<{ matches: Array<{ path: { value: string } }> }>).flatMap(
        (rule) => rule.matches.map((m) => m.path.value),
      );
      expect(paths).toEqual(['/api/v2/merchant/']); // the lookup's route is not asked
      expect(spec.extAuth.failOpen).toBe(false);
      const [auth] = spec.extAuth.http.backendRefs;
      expect(resolve(all, auth as BackendRef)).toEqual({
        container: 'leadgate',
        port: config.forward_auth.listen.port,
      });
      expect([...spec.extAuth.http.headersToBackend].sort()).toEqual([...IDENTITY].sort());
      for (const h of [...CREDENTIALS, ...IDENTITY]) expect(spec.extAuth.headersToExtAuth).toContain(h);
    });

    it("Istio: the CUSTOM policy's provider names leadgate-auth:8081, on the app's port only, for the app's pods", () => {
      const all = render('gateway-api/istio/');
      const config = expectForwardAuthRoutes(all);
      const policy = all.find((o) => o.kind === 'AuthorizationPolicy') as Obj;
      const spec = policy.spec as {
        action: string;
        provider: { name: string };
        selector: { matchLabels: Record<string, string> };
        rules: Array<{ to: Array<{ operation: { ports: string[]; notPaths: string[] } }> }>;
      };
      expect(spec.action).toBe('CUSTOM');
      const deployment = all.find((o) => o.kind === 'Deployment') as Obj;
      const labels = (deployment.spec.template as { metadata: { labels: Record<string, string> } }).metadata
        .labels;
      expect(labels).toMatchObject(spec.selector.matchLabels);
      const op = spec.rules[0]?.to[0]?.operation;
      const app = resolve(all, { name: 'merchant-api-app', port: 3000 });
      expect(op?.ports).toEqual([String(app.port)]);
      expect(op?.notPaths).toContain('/api/v2/merchant/leads/*');
      // The mesh config that defines the policy's provider: its Service and port, its headers.
      const mesh = istioMeshConfig();
      const provider = mesh.extensionProviders.find((p) => p.name === spec.provider.name);
      const service = provider?.envoyExtAuthzHttp.service.split('.')[0] ?? '';
      expect(resolve(all, { name: service, port: provider?.envoyExtAuthzHttp.port ?? 0 })).toEqual({
        container: 'leadgate',
        port: config.forward_auth.listen.port,
      });
      const copied = provider?.envoyExtAuthzHttp.headersToUpstreamOnAllow ?? [];
      for (const h of IDENTITY.slice(0, 4)) expect(copied).toContain(h);
      for (const h of copied) expect(IDENTITY).toContain(h);
    });

    it('NGINX Gateway Fabric: every request to leadgate in the data path, no ExternalAuth filter', () => {
      const all = render('gateway-api/nginx-gateway-fabric/');
      const config = gatewayConfig(all);
      const r = routes(all);
      expect([...r.keys()]).toEqual(['/api/v2/merchant/']);
      expect(resolve(all, r.get('/api/v2/merchant/') as BackendRef)).toEqual({
        container: 'leadgate',
        port: config.listen.port,
      });
      expect(JSON.stringify(all)).not.toContain('ExternalAuth');
    });
  },
);
