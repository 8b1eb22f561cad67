import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import tls from 'node:tls';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { makePki, secretVolume } from '../helpers/certs.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires, runs } from '../helpers/optional.js';
import { raw } from '../helpers/raw.js';

/**
 * CONTRACT §11's shipped manifests, rendered by `kubectl kustomize` as their headers say:
 * deploy/kubernetes/components/tls (a cert-manager Certificate, mounted into the sidecar),
 * deploy/gateway-api/backend-tls (BackendTLSPolicy) and components/nlb-proxy-protocol (an NLB
 * sending PROXY v2). Every reference is resolved inside the render, and the rendered gateway.yaml
 * is run by a real leadgate with the files where the manifests mount them.
 */
const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;
const hasKubectl = requires('kubectl', runs('kubectl', ['version', '--client']), 'install kubectl');

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
} & Record<
  string,
  // biome-ignore lint/suspicious/noExplicitAny: rendered YAML, read field by field below
  any
>;

function render(dir: string): Obj[] {
  const text = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  return parseAllDocuments(text).map((d) => d.toJS() as Obj);
}
const find = (all: Obj[], kind: string, name: string) => {
  const hit = all.find((o) => o.kind === kind && o.metadata.name === name);
  expect(hit, `${kind} ${name}`).toBeDefined();
  return hit as Obj;
};
/** An overlay of the base with one component, as the component's header says to enable it. */
function withComponent(component: string): Obj[] {
  const overlay = mkdtempSync(join(tmpdir(), 'leadgate-overlay-'));
  const base = join(DEPLOY, 'kubernetes');
  writeFileSync(
    join(overlay, 'kustomization.yaml'),
    `resources: [${relative(overlay, base)}]\ncomponents: [${relative(overlay, join(base, 'components', component))}]\n`,
  );
  return render(overlay);
}
function leadgateContainer(all: Obj[]) {
  const pod = new Deployment(find(all, 'Deployment', 'merchant-api') as never).spec?.template.spec;
  const c = pod?.initContainers?.find((x) => x.name === 'leadgate');
  expect(c).toBeDefined();
  return { pod, c };
}
/** The rendered gateway.yaml, with only the machine's addresses and the mounted folders moved. */
function runnable(all: Obj[], mounts: Record<string, string>): string {
  let text = (find(all, 'ConfigMap', 'leadgate-config').data as Record<string, string>)['gateway.yaml'] ?? '';
  for (const [from, to] of Object.entries(mounts)) text = text.replaceAll(from, to);
  return text
    .replace(/host: 0\.0\.0\.0, port: \d+/g, 'host: 127.0.0.1, port: 0')
    .replace(/host: 0\.0\.0\.0\n(\s+)port: \d+/, 'host: 127.0.0.1\n$1port: 0');
}
function writeRunnable(text: string, secrets: Obj): string {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-rendered-'));
  for (const [name, value] of Object.entries(secrets.stringData as Record<string, string>)) {
    writeFileSync(join(dir, name), value);
  }
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, text.replaceAll('/run/secrets/leadgate/', `${dir}/`));
  return file;
}

describe.runIf(hasKubectl)('shipped TLS and PROXY protocol manifests', () => {
  it('backend-tls: BackendTLSPolicy → Service https port → the sidecar serving the cert-manager Secret; renewals reach it', async () => {
    const all = render(join(DEPLOY, 'gateway-api', 'backend-tls'));
    const policy = find(all, 'BackendTLSPolicy', 'merchant-api');
    expect(policy.apiVersion).toBe('gateway.networking.k8s.io/v1');
    const [target] = policy.spec.targetRefs as Array<{ kind: string; name: string; sectionName: string }>;
    const service = new Service(find(all, 'Service', target?.name ?? '') as never);
    service.validate();
    const port = service.spec?.ports?.find((p) => p.name === target?.sectionName);
    expect(port?.appProtocol).toBe('https');
    // the route reaches that port
    const route = find(all, 'HTTPRoute', 'merchant-api');
    expect(route.spec.rules[0].backendRefs[0]).toEqual({ name: service.metadata?.name, port: port?.port });
    expect(find(all, 'Gateway', route.spec.parentRefs[0].name)).toBeDefined();
    // the CA the policy reads exists, and the hostname is one the Certificate names
    for (const ref of policy.spec.validation.caCertificateRefs)
      expect(find(all, ref.kind, ref.name).data).toHaveProperty('ca.crt');
    const cert = find(all, 'Certificate', 'leadgate-tls');
    expect(cert.spec.dnsNames).toContain(policy.spec.validation.hostname);
    const issuer = find(all, cert.spec.issuerRef.kind, cert.spec.issuerRef.name);
    const ca = find(all, 'Certificate', issuer.spec.ca.secretName);
    expect(ca.spec.isCA).toBe(true);
    expect(find(all, ca.spec.issuerRef.kind, ca.spec.issuerRef.name).spec).toHaveProperty('selfSigned');
    // the Secret is mounted where gateway.yaml reads it, in the sidecar, and its port is the listener's
    const { pod, c } = leadgateContainer(all);
    const volume = pod?.volumes?.find((v) => v.secret?.secretName === cert.spec.secretName);
    const mount = c?.volumeMounts?.find((m) => m.name === volume?.name);
    const config = parse(
      (find(all, 'ConfigMap', 'leadgate-config').data as Record<string, string>)['gateway.yaml'] ?? '',
    );
    expect(dirname(config.listen.tls.cert_file)).toBe(mount?.mountPath);
    expect(dirname(config.listen.tls.key_file)).toBe(mount?.mountPath);
    expect(c?.ports?.find((p) => p.containerPort === port?.targetPort)).toBeDefined();
    expect(config.listen.port).toBe(port?.targetPort);

    // run it: a Secret volume as kubelet lays it out, with a pair for the policy's hostname
    const pki = makePki();
    const hostname = policy.spec.validation.hostname as string;
    // issued for the Certificate's dnsNames, as cert-manager would
    const issue = (name: string) => pki.server(name, 30, cert.spec.dnsNames as string[]);
    const first = issue('renewal-1');
    const files = (p: { cert: string; key: string }) => ({
      'tls.crt': readFileSync(p.cert, 'utf8'),
      'tls.key': readFileSync(p.key, 'utf8'),
      'ca.crt': readFileSync(pki.caCert, 'utf8'),
    });
    const volumeDir = secretVolume(files(first));
    const file = writeRunnable(
      runnable(all, { [`${mount?.mountPath}/`]: `${volumeDir.dir}/` }),
      find(all, 'Secret', 'leadgate-secrets'),
    );
    const gw = await startTestGateway(file);
    try {
      const serial = () =>
        new Promise<string>((resolve, reject) => {
          const s = tls.connect({
            host: '127.0.0.1',
            port: gw.apiPort,
            ca: readFileSync(pki.caCert),
            servername: hostname,
          });
          s.once('secureConnect', () => {
            resolve(s.getPeerCertificate().serialNumber);
            s.destroy();
          });
          s.once('error', reject);
        });
      const before = await serial();
      const second = issue('renewal-2');
      volumeDir.swap(files(second));
      const deadline = Date.now() + 10_000;
      while ((await serial()) === before && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(await serial()).not.toBe(before);
      expect(hostname).toMatch(/\.svc$/);
    } finally {
      await gw.close();
    }
  });

  it('nlb-proxy-protocol: an NLB Service with PROXY v2 on, to the listener that believes its VPC range only', async () => {
    const all = withComponent('nlb-proxy-protocol');
    const svc = find(all, 'Service', 'merchant-api-public');
    new Service(svc as never).validate();
    expect(svc.metadata.annotations?.['service.beta.kubernetes.io/aws-load-balancer-proxy-protocol']).toBe(
      '*',
    );
    expect(svc.metadata.annotations?.['service.beta.kubernetes.io/aws-load-balancer-nlb-target-type']).toBe(
      'ip',
    );
    expect(svc.spec.type).toBe('LoadBalancer');
    const config = parse(
      (find(all, 'ConfigMap', 'leadgate-config').data as Record<string, string>)['gateway.yaml'] ?? '',
    );
    expect(svc.spec.ports[0].targetPort).toBe(config.listen.port);
    expect(config.listen.proxy_protocol.from).toEqual(['10.0.0.0/16']);
    const { c } = leadgateContainer(all);
    expect(c?.ports?.find((p) => p.containerPort === config.listen.port)).toBeDefined();

    // run it as rendered: this machine (127.0.0.1) is not the NLB, so its PROXY header is refused,
    // while a connection without one is served
    const gw = await startTestGateway(
      writeRunnable(runnable(all, {}), find(all, 'Secret', 'leadgate-secrets')),
    );
    try {
      const header = 'PROXY TCP4 203.0.113.9 10.0.0.5 40000 80\r\n';
      const request = 'GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
      const refused = await raw(gw.apiPort, [header, request]);
      expect(refused.closed).toBe(true);
      expect(refused.text).toBe('');
      const plain = await raw(gw.apiPort, [request]);
      expect(plain.text).toMatch(/^HTTP\/1\.1 401 /);
    } finally {
      await gw.close();
    }
  });
});
