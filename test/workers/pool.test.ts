import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, ask } from '../helpers/client.js';
import { nextSecond } from '../helpers/clock.js';
import { digestLookup, KEYS, writeConfig } from '../helpers/fixture.js';
import { runCli, type Served, serve, steadyLoadThroughSigterm } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

const pool = (extra = '', shutdown = 'shutdown: { delay_s: 0, timeout_s: 2 }') => {
  const path = writeConfig({
    upstream: upstream.url,
    extra: `workers: 2
digest: { single_use: true }
rate_limits:
  policies: [{ name: per-key, by: key, limit: 4, window_s: 60, keys: [writer] }]
${extra}`,
  });
  writeFileSync(path, readFileSync(path, 'utf8').replace('shutdown: { delay_s: 0, timeout_s: 2 }', shutdown));
  return path;
};
const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
const writer = { 'x-apikey': KEYS.write.key, 'x-source': 'web' };
const workerPids = (s: Served) =>
  s.lines.filter((l) => l.msg === 'worker started').map((l) => Number(l.worker_pid));
const sumOf = (text: string, series: RegExp) =>
  text
    .split('\n')
    .filter((l) => series.test(l))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);

describe('workers: 2 without Redis (node:cluster, state in the primary)', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(pool());
    await nextSecond();
  });
  afterAll(() => s.stop());

  it('starts two workers behind one ready line', () => {
    expect(workerPids(s)).toHaveLength(2);
    expect(s.lines.find((l) => l.msg === 'leadgate ready')?.workers).toBe(2);
  });

  it('holds single use and rate limits across the workers', async () => {
    const ts = Math.floor(Date.now() / 1000);
    const lookup = () => ask(s.apiPort, digestLookup('cust-1', ts));
    // each ask is a new connection: the primary hands connections to the workers in turn
    const uses = [await lookup(), await lookup(), await lookup()];
    expect(uses.map((r) => r.status)).toEqual([200, 401, 401]);
    expect(uses[1]?.json().code).toBe('replayed_digest');
    const answers: Answer[] = [];
    for (let i = 0; i < 8; i++)
      answers.push(await ask(s.apiPort, { path: '/api/v2/merchant/orders', headers: writer }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
  });

  it('sums every worker in /metrics and is ready while its workers are', async () => {
    for (let i = 0; i < 6; i++) await ask(s.apiPort, { path: '/api/v2/merchant/orders', headers: server });
    const metrics = await ask(s.adminPort, { path: '/metrics' });
    expect(metrics.status).toBe(200);
    expect(sumOf(metrics.text, /^leadgate_requests_total\{status="200",code="ok",key="server"\}/)).toBe(6);
    expect(metrics.text).toMatch(/^leadgate_workers 2$/m);
    expect(metrics.text).toMatch(/^leadgate_workers_ready 2$/m);
    expect(metrics.text).toMatch(/^leadgate_ready 1$/m);
    // one value for the pod, not one per worker added up
    expect(metrics.text).toMatch(/^leadgate_config_info\{hash="[0-9a-f]{16}"\} 1$/m);
    expect(metrics.text).toMatch(/^leadgate_state_store_up 1$/m);
    const loaded = Number(/^leadgate_config_loaded_timestamp_seconds (\S+)$/m.exec(metrics.text)?.[1]);
    expect(Math.abs(loaded - Date.now() / 1000)).toBeLessThan(600);
    expect(metrics.text).toMatch(/^leadgate_config_reloads_total\{result="failed"\} 0$/m);
    expect(metrics.text).toMatch(/^process_cpu_seconds_total /m);
    expect((await ask(s.adminPort, { path: '/readyz' })).status).toBe(200);
  });

  it('relays SIGHUP to every worker', async () => {
    const before = s.lines.filter((l) => l.msg === 'config unchanged').length;
    s.child.kill('SIGHUP');
    await s.waitFor(() => s.lines.filter((l) => l.msg === 'config unchanged').length >= before + 2);
  });
});

describe('a worker killed with SIGKILL', () => {
  it('is started again; only its own in-flight requests fail', async () => {
    const s = await serve(pool());
    try {
      upstream.behave((req, res) => {
        setTimeout(() => res.end('ok'), req.url?.includes('slow') ? 800 : 1).unref();
      });
      const results: Array<number | string> = [];
      const inflight = Array.from({ length: 10 }, () =>
        ask(s.apiPort, { path: '/api/v2/merchant/slow', headers: server }).then(
          (r) => results.push(r.status),
          (e: Error) => results.push(e.message),
        ),
      );
      await new Promise((r) => setTimeout(r, 300));
      const [victim] = workerPids(s);
      process.kill(victim as number, 'SIGKILL');
      await Promise.all(inflight);
      const ok = results.filter((r) => r === 200).length;
      expect(ok).toBeGreaterThan(0); // the other worker's requests were answered
      expect(ok).toBeLessThan(10); // the killed worker's were not
      expect(results.filter((r) => r !== 200).every((r) => typeof r === 'string')).toBe(true);
      const died = await s.waitFor((l) => l.msg === 'worker died; starting another');
      expect(died.signal).toBe('SIGKILL');
      await s.waitFor(
        (l) =>
          l.msg === 'worker started' &&
          l.worker_pid !== victim &&
          !workerPids(s).slice(0, 2).includes(Number(l.worker_pid)),
      );
      await new Promise((r) => setTimeout(r, 500));
      const after: number[] = [];
      for (let i = 0; i < 6; i++)
        after.push((await ask(s.apiPort, { path: '/api/v2/merchant/orders', headers: server })).status);
      expect(after).toEqual([200, 200, 200, 200, 200, 200]);
      const metrics = await ask(s.adminPort, { path: '/metrics' });
      expect(metrics.text).toMatch(/^leadgate_worker_restarts_total 1$/m);
    } finally {
      upstream.behave((_req, res, body) => res.end(body.length > 0 ? body : 'ok'));
      await s.stop();
    }
  });
});

describe('a scrape while a worker is starting again', () => {
  it('answers at once with the ready workers, not after waiting on the one still loading', async () => {
    const s = await serve(pool());
    try {
      const [victim] = workerPids(s);
      process.kill(victim as number, 'SIGKILL');
      await s.waitFor(
        (l) => l.msg === 'worker started' && !workerPids(s).slice(0, 2).includes(Number(l.worker_pid)),
      );
      // the new worker is connected but still loading: only the ready one is asked
      const metrics = await ask(s.adminPort, { path: '/metrics' });
      expect(metrics.status).toBe(200);
      expect(metrics.text).toMatch(/^leadgate_worker_restarts_total 1$/m);
      expect(metrics.text).toMatch(/^leadgate_workers_ready 1$/m);
      expect(metrics.text).toMatch(/^process_cpu_seconds_total /m);
    } finally {
      await s.stop();
    }
  });
});

describe('SIGTERM to the primary of a pool', () => {
  it('drains every worker under steady load with zero failed requests, then exits 0', async () => {
    upstream.behave((req, res) => {
      setTimeout(() => res.end('ok'), req.url?.includes('slow') ? 1200 : 20).unref();
    });
    const s = await serve(pool('', 'shutdown: { delay_s: 1, timeout_s: 5 }'));
    const { results, readyz, code } = await steadyLoadThroughSigterm(s, '/api/v2/merchant/orders', server);
    upstream.behave((_req, res, body) => res.end(body.length > 0 ? body : 'ok'));
    expect(readyz).toBe(503);
    expect(results.length).toBeGreaterThan(20);
    expect(results.filter((r) => r !== 200)).toEqual([]);
    expect(code).toBe(0);
    expect(s.lines.filter((l) => l.msg === 'listener closed; finishing in-flight requests')).toHaveLength(2);
  });
});

describe('a pool whose workers cannot start', () => {
  it('exits 1 with the reason and leaves no worker behind', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    const path = pool();
    writeFileSync(
      path,
      readFileSync(path, 'utf8').replace(
        'listen: { host: 127.0.0.1, port: 0 }',
        `listen: { host: 127.0.0.1, port: ${port} }`,
      ),
    );
    try {
      const r = runCli(['serve', '--config', path]);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('a worker exited while starting');
      expect(r.stdout).toContain('EADDRINUSE');
      const pids = [...r.stdout.matchAll(/"worker_pid":(\d+),"msg":"worker started"/g)].map((m) =>
        Number(m[1]),
      );
      expect(pids).toHaveLength(2);
      const alive = pids.filter((pid) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      });
      expect(alive).toEqual([]);
    } finally {
      taken.close();
    }
  });
});

describe('workers: auto', () => {
  it('takes the cgroup CPU quota (a fixture through LEADGATE_CGROUP_ROOT)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'leadgate-cgroup-'));
    writeFileSync(join(root, 'cpu.max'), '100000 100000\n');
    const path = writeConfig({ upstream: upstream.url, extra: 'workers: auto' });
    const s = await serve(path, { LEADGATE_CGROUP_ROOT: root });
    try {
      expect(s.lines.find((l) => l.msg === 'leadgate ready')?.workers).toBe(1);
      expect(workerPids(s)).toEqual([]);
    } finally {
      await s.stop();
    }
  });
});
