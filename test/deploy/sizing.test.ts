import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ask } from '../helpers/client.js';
import { freePort } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const DIR = new URL('../../deploy/kubernetes/', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, DIR), 'utf8');

interface Container {
  name: string;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

/** The leadgate container of the shipped Deployment (a native sidecar or a plain container). */
function leadgateContainer(): Container {
  const deployment = parseAllDocuments(read('deployment.yaml'))
    .map((d) => d.toJS() as { kind?: string; spec?: { template?: { spec?: Record<string, Container[]> } } })
    .find((o) => o.kind === 'Deployment');
  const pod = deployment?.spec?.template?.spec ?? {};
  const all = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
  const found = all.find((c) => c.name === 'leadgate');
  if (!found) throw new Error('no leadgate container in deployment.yaml');
  return found;
}

/** A Kubernetes memory quantity (`384Mi`, `1Gi`, `500M`) in bytes. */
function bytesOf(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(quantity);
  if (!m) throw new Error(`unexpected quantity ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

/** Resident memory of a process and of every process below it, from /proc. */
function residentTree(pid: number): Array<{ pid: number; rssBytes: number }> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number),
  );
  return [{ pid, rssBytes: kb * 1024 }, ...children.flatMap(residentTree)];
}

let dir: string;
let upstream: RecordingUpstream;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leadgate-sizing-'));
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The shipped ConfigMap's gateway.yaml as the pod runs it: the Secret's files where it mounts
 * them, the app (here a recording upstream) where the config says, a cgroup CPU quota equal to
 * the container's CPU limit (what `workers: auto` reads).
 */
function podLike(): { config: string; env: Record<string, string> } {
  const configMap = parse(read('configmap.yaml')) as { data: Record<string, string> };
  const secret = parse(read('secret.yaml')) as { stringData: Record<string, string> };
  const secrets = join(dir, 'secrets');
  mkdirSync(secrets, { recursive: true });
  for (const [name, value] of Object.entries(secret.stringData)) writeFileSync(join(secrets, name), value);
  const text = (configMap.data['gateway.yaml'] ?? '')
    .replaceAll('/run/secrets/leadgate/', `${secrets}/`)
    .replace('http://127.0.0.1:3000', upstream.url);
  const config = join(dir, 'gateway.yaml');
  writeFileSync(config, text);
  const cpus = Number(leadgateContainer().resources?.limits?.cpu ?? '1');
  const cgroup = join(dir, 'cgroup');
  mkdirSync(cgroup, { recursive: true });
  writeFileSync(join(cgroup, 'cpu.max'), `${cpus * 100_000} 100000\n`);
  return { config, env: { LEADGATE_CGROUP_ROOT: cgroup } };
}

describe('the Kubernetes sizing of deploy/kubernetes/deployment.yaml', () => {
  it('requests and limits the memory that the shipped config with workers: auto measures under its CPU limit', async () => {
    upstream.behave((_req, res) => res.writeHead(200).end('{}'));
    const pod = podLike();
    const served: Served = await serve(pod.config, {
      ...pod.env,
      LEADGATE_LISTEN_PORT: String(await freePort()),
      LEADGATE_ADMIN_PORT: String(await freePort()),
    });
    try {
      const ready = await served.waitFor((l) => l.msg === 'leadgate ready');
      const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
      // some traffic through every worker: refusals (the shipped keys are placeholders) and /metrics
      for (let i = 0; i < 400; i++) {
        await ask(served.apiPort, {
          path: '/api/v2/merchant/orders',
          headers: { 'x-apikey': `sk_${i}`, 'x-source': 'web' },
          agent,
        });
      }
      await ask(served.adminPort, { path: '/metrics' });
      agent.destroy();
      const tree = residentTree(served.child.pid ?? 0);
      const total = tree.reduce((sum, p) => sum + p.rssBytes, 0);
      const resources = leadgateContainer().resources ?? {};
      process.stderr.write(
        `[sizing] workers ${ready.workers}: RSS ${tree.map((p) => `${(p.rssBytes / 2 ** 20).toFixed(0)}`).join(' + ')} = ${(total / 2 ** 20).toFixed(0)} MiB; ` +
          `requests ${resources.requests?.memory}, limits ${resources.limits?.memory}\n`,
      );
      // a primary and one worker per CPU of the limit
      expect(tree.length).toBe(1 + Number(resources.limits?.cpu));
      expect(ready.workers).toBe(Number(resources.limits?.cpu));
      // the request covers what the pod uses at rest, and the limit leaves room above it
      expect(total).toBeLessThanOrEqual(bytesOf(resources.requests?.memory ?? '0'));
      expect(bytesOf(resources.limits?.memory ?? '0')).toBeGreaterThan(total * 1.25);
    } finally {
      await served.stop();
    }
  }, 60_000);
});

describe('readiness changes are logged with their reason', () => {
  it('says why /readyz turned 503 (the health path answered 404) and when it turned back', async () => {
    let status = 404;
    upstream.behave((req, res) => res.writeHead(req.url === '/healthz' ? status : 200).end());
    const config = join(dir, 'health.yaml');
    writeFileSync(
      config,
      `listen: { host: 127.0.0.1, port: 0 }\nadmin: { host: 127.0.0.1, port: 0 }\n` +
        `upstream: { url: "${upstream.url}", health_path: /healthz }\n` +
        'keys:\n  - { name: k, key: sk_readiness_test_key_0001, access_type: WRITE, signing_secret: a-long-enough-signing-secret-0001 }\n',
    );
    const served = await serve(config);
    try {
      const down = await served.waitFor((l) => l.component === 'readiness');
      expect(down.level).toBe('warn');
      expect(down.reason).toBe('upstream health check failed (GET /healthz → 404)');
      expect((await ask(served.adminPort, { path: '/readyz' })).status).toBe(503);
      status = 200;
      const up = await served.waitFor((l) => l.component === 'readiness' && l !== down, 10_000);
      expect(up.level).toBe('info');
      expect(up.reason).toBe('upstream health check passed (GET /healthz → 200)');
      expect((await ask(served.adminPort, { path: '/readyz' })).status).toBe(200);
    } finally {
      await served.stop();
    }
  }, 30_000);
});
