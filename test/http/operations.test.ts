import { mkdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask, scrape } from '../helpers/client.js';
import { KEYS, LEADS_YAML, writeConfig } from '../helpers/fixture.js';
import { type Served, serve, steadyLoadThroughSigterm } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await upstream.close();
});

const NEW_KEY = 'sk_rotated_in_0000000000000009';
const withNewKey = (yaml: string) =>
  `${yaml}  - { name: added, key: "${NEW_KEY}", access_type: WRITE, signing_secret: "added-secret-0000000000000009" }\n`;
const asNewKey = (port: number) =>
  ask(port, { path: '/api/v2/merchant/orders', headers: { 'x-apikey': NEW_KEY, 'x-source': 'web' } });
const asServer = (port: number) =>
  ask(port, { path: '/api/v2/merchant/orders', headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' } });

async function eventually<T>(probe: () => Promise<T>, ok: (v: T) => boolean, ms = 2000): Promise<T> {
  const until = Date.now() + ms;
  let last = await probe();
  while (!ok(last) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    last = await probe();
  }
  return last;
}

const metrics = scrape;

describe('live reload', () => {
  let served: Served | null = null;
  afterAll(async () => served?.stop());

  it('picks up an edited config within 2 s, and refuses a broken one while the old one serves', async () => {
    const path = writeConfig({ upstream: upstream.url });
    served = await serve(path);
    const port = served.apiPort;
    expect((await asNewKey(port)).status).toBe(401);

    writeFileSync(path, withNewKey(readFileSync(path, 'utf8')));
    expect(
      (
        await eventually(
          () => asNewKey(port),
          (r) => r.status === 200,
        )
      ).status,
    ).toBe(200);

    const good = readFileSync(path, 'utf8');
    writeFileSync(path, good.replace('[10.9.9.9]', '[10.9.9.9/40]'));
    const refused = await served.waitFor(
      (l) => l.msg === 'config reload refused; the previous config keeps serving',
    );
    expect(JSON.stringify(refused.problems)).toMatch(/gateway\.yaml:\d+: keys\.3\.origin_ips\.0/);
    expect((await asNewKey(port)).status).toBe(200);
    const m = await metrics(served.adminPort);
    expect(m.get('leadgate_config_reloads_total{result="failed"}')).toBeGreaterThanOrEqual(1);
    expect(m.get('leadgate_config_reloads_total{result="ok"}')).toBeGreaterThanOrEqual(1);

    // a removed key stops working
    writeFileSync(path, good.replace(/ {2}- \{ name: added.*\n/, ''));
    expect(
      (
        await eventually(
          () => asNewKey(port),
          (r) => r.status === 401,
        )
      ).status,
    ).toBe(401);
    expect((await asServer(port)).status).toBe(200);
  });

  it('follows a Kubernetes ..data symlink swap', async () => {
    // the layout kubelet makes for a mounted ConfigMap
    const root = dirname(writeConfig({ upstream: upstream.url }));
    const mount = join(root, 'mount');
    const v1 = join(mount, '..2026_11_22_v1');
    mkdirSync(v1, { recursive: true });
    const yaml = readFileSync(join(root, 'gateway.yaml'), 'utf8');
    writeFileSync(join(v1, 'gateway.yaml'), yaml);
    writeFileSync(join(v1, 'leads.yaml'), LEADS_YAML);
    symlinkSync('..2026_11_22_v1', join(mount, '..data'));
    symlinkSync('..data/gateway.yaml', join(mount, 'gateway.yaml'));
    symlinkSync('..data/leads.yaml', join(mount, 'leads.yaml'));
    const s = await serve(join(mount, 'gateway.yaml'));
    try {
      expect((await asNewKey(s.apiPort)).status).toBe(401);
      const v2 = join(mount, '..2026_11_22_v2');
      mkdirSync(v2);
      writeFileSync(join(v2, 'gateway.yaml'), withNewKey(yaml));
      writeFileSync(join(v2, 'leads.yaml'), LEADS_YAML);
      symlinkSync('..2026_11_22_v2', join(mount, '..data_tmp'));
      renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
      expect(
        (
          await eventually(
            () => asNewKey(s.apiPort),
            (r) => r.status === 200,
          )
        ).status,
      ).toBe(200);
    } finally {
      await s.stop();
    }
  });

  it('reloads on SIGHUP (file watching off)', async () => {
    const path = writeConfig({ upstream: upstream.url });
    const s = await serve(path, { LEADGATE_WATCH: '0' });
    try {
      writeFileSync(path, withNewKey(readFileSync(path, 'utf8')));
      await new Promise((r) => setTimeout(r, 1500));
      expect((await asNewKey(s.apiPort)).status).toBe(401);
      s.child.kill('SIGHUP');
      await s.waitFor((l) => l.msg === 'config reloaded' && l.cause === 'sighup');
      expect((await asNewKey(s.apiPort)).status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  it('survives a watched file that disappears and comes back', async () => {
    const path = writeConfig({ upstream: upstream.url, extra: 'leads: { file: leads.yaml }' });
    const leads = join(dirname(path), 'leads.yaml');
    const s = await serve(path);
    try {
      unlinkSync(leads);
      await s.waitFor((l) => l.msg === 'config reload refused; the previous config keeps serving');
      expect((await asServer(s.apiPort)).status).toBe(200);
      writeFileSync(leads, LEADS_YAML.replace('cust-1', 'cust-renamed'));
      const recovered = await s.waitFor((l) => l.msg === 'config reloaded');
      expect(recovered).toMatchObject({ cause: 'file', result: 'ok', recovered: true });
      expect((await asServer(s.apiPort)).status).toBe(200);
    } finally {
      await s.stop();
    }
  });
});

describe('graceful drain', () => {
  it('serves steady load through SIGTERM with zero failed requests, then exits 0', async () => {
    upstream.behave((req, res) => {
      const delay = req.url?.includes('slow') ? 1200 : 20;
      setTimeout(() => res.end('ok'), delay).unref();
    });
    const path = writeConfig({ upstream: upstream.url });
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace(
        'shutdown: { delay_s: 0, timeout_s: 2 }',
        'shutdown: { delay_s: 1, timeout_s: 5 }',
      ),
    );
    const s = await serve(path);
    const { results, readyz, code } = await steadyLoadThroughSigterm(s, '/api/v2/merchant/orders', {
      'x-apikey': KEYS.server.key,
      'x-source': 'web',
    });
    upstream.behave((_req, res, body) => res.end(body.length > 0 ? body : 'ok'));
    expect(readyz).toBe(503);
    expect(results.length).toBeGreaterThan(20);
    expect(results.filter((r) => r !== 200)).toEqual([]);
    expect(code).toBe(0);
    expect(s.lines.some((l) => l.msg === 'drained; bye')).toBe(true);
  });

  it('exits at once on a second signal', async () => {
    const path = writeConfig({ upstream: upstream.url });
    writeFileSync(path, readFileSync(path, 'utf8').replace('delay_s: 0', 'delay_s: 30'));
    const s = await serve(path);
    s.child.kill('SIGTERM');
    await s.waitFor((l) => l.msg === 'shutting down');
    const t0 = Date.now();
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(1);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('limits and metrics', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(
      writeConfig({
        upstream: upstream.url,
        extra: 'limits: { header_timeout_ms: 600, request_timeout_ms: 5000, max_body_bytes: 1000 }',
      }),
    );
  });
  afterAll(async () => s.stop());

  it('answers oversized headers with 431 problem+json', async () => {
    const res = await ask(s.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web', 'x-big': 'a'.repeat(17 * 1024) },
    });
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.json().code).toBe('headers_too_large');
  });

  it('answers bodies over max_body_bytes with 413, declared or chunked', async () => {
    const writer = { 'x-apikey': KEYS.write.key, 'x-source': 'web' };
    const declared = await ask(s.apiPort, {
      method: 'POST',
      path: '/api/v2/merchant/actions',
      headers: writer,
      body: 'x'.repeat(2000),
    });
    expect([declared.status, declared.json().code]).toEqual([413, 'body_too_large']);
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: s.apiPort,
          method: 'POST',
          path: '/api/v2/merchant/actions',
          headers: writer,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write('x'.repeat(800));
      setTimeout(() => req.end('y'.repeat(800)), 50);
    });
    expect(chunked).toBe(413);
  });

  it('cuts off a slowloris client while serving a normal one', async () => {
    const sock = net.connect(s.apiPort, '127.0.0.1');
    let got = '';
    sock.on('data', (d) => {
      got += d.toString();
    });
    const closed = new Promise<number>((resolve) => sock.on('close', () => resolve(Date.now())));
    const t0 = Date.now();
    sock.write('GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => sock.writable && sock.write('x-drip: 1\r\n'), 100);
    const normal = await asServer(s.apiPort);
    expect(normal.status).toBe(200);
    const at = await closed;
    clearInterval(drip);
    expect(at - t0).toBeLessThan(4000);
    expect(got).toMatch(/^HTTP\/1\.1 408/);
    expect(got).toContain('request_timeout');
  });

  it('exposes Prometheus metrics whose counters move with traffic', async () => {
    const before = await metrics(s.adminPort);
    const label = 'leadgate_requests_total{status="200",code="ok",key="server"}';
    const refusedLabel = 'leadgate_requests_total{status="401",code="invalid_api_key",key=""}';
    for (let i = 0; i < 3; i++) await asServer(s.apiPort);
    await ask(s.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': 'sk_nope_00000000000000', 'x-source': 'web' },
    });
    const after = await metrics(s.adminPort);
    expect((after.get(label) ?? 0) - (before.get(label) ?? 0)).toBe(3);
    expect((after.get(refusedLabel) ?? 0) - (before.get(refusedLabel) ?? 0)).toBe(1);
    expect(after.get('leadgate_request_duration_seconds_count{kind="forward"}')).toBeGreaterThanOrEqual(3);
    expect(after.get('leadgate_upstream_duration_seconds_count{kind="forward"}')).toBeGreaterThanOrEqual(3);
    // counted on the hot path without label hashing, rendered when scraped
    const sum = after.get('leadgate_request_duration_seconds_sum{kind="forward"}') ?? 0;
    expect(sum).toBeGreaterThan(before.get('leadgate_request_duration_seconds_sum{kind="forward"}') ?? 0);
    expect(after.get('leadgate_request_duration_seconds_bucket{le="+Inf",kind="forward"}')).toBe(
      after.get('leadgate_request_duration_seconds_count{kind="forward"}'),
    );
    expect(after.get('leadgate_inflight_requests')).toBe(0);
    expect(after.get('leadgate_log_lines_dropped_total')).toBe(0);
    expect([...after.keys()].some((k) => k.startsWith('leadgate_config_info{hash="'))).toBe(true);
    expect(after.has('process_cpu_user_seconds_total')).toBe(true);
    expect(after.has('nodejs_eventloop_lag_seconds')).toBe(true);
    const text = (await ask(s.adminPort, { path: '/metrics' })).text;
    expect(text).not.toContain('/api/v2');
    expect(text).not.toContain(KEYS.server.key);
  });
});

describe('readiness', () => {
  it('is 503 while the upstream health path fails, 200 once it answers', async () => {
    let healthy = false;
    upstream.behave((req, res) => {
      if (req.url === '/health') res.writeHead(healthy ? 200 : 503).end();
      else res.end('ok');
    });
    const path = writeConfig({ upstream: upstream.url });
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace('timeout_ms: 2000,', 'timeout_ms: 2000, health_path: /health,'),
    );
    const t = await serve(path);
    try {
      expect((await ask(t.adminPort, { path: '/readyz' })).status).toBe(503);
      healthy = true;
      expect(
        (
          await eventually(
            () => ask(t.adminPort, { path: '/readyz' }),
            (r) => r.status === 200,
            4000,
          )
        ).status,
      ).toBe(200);
      expect((await ask(t.adminPort, { path: '/healthz' })).status).toBe(200);
    } finally {
      await t.stop();
      upstream.behave((_req, res, body) => res.end(body.length > 0 ? body : 'ok'));
    }
  });
});
