import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { type Served, serve } from '../helpers/process.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * A slow body never holds an upstream socket for long (issue 47, point 2): a real `leadgate serve`,
 * a real upstream, raw sockets. The minimum rate is set high and its window short here so the
 * tests are quick; the defaults (240 B/s over 5 s) are the same code.
 */
const HOST = ['Host', '127.0.0.1'] as const;
const writer = [HOST, ['x-apikey', KEYS.write.key], ['x-source', 'web']] as const;
const post = (tag: string, length: number, body = '') =>
  request(
    `POST /api/v2/merchant/actions?tag=${tag} HTTP/1.1`,
    [...writer, ['Content-Length', String(length)]],
    body,
  );

let upstream: RecordingUpstream;
let s: Served;
const arrived = (tag: string) => upstream.arrived.filter((r) => r.url.endsWith(`tag=${tag}`)).length;

async function bound(name: string): Promise<number> {
  const text = (await ask(s.adminPort, { path: '/metrics' })).text;
  const m = new RegExp(`^leadgate_connection_bounds_total\\{bound="${name}"\\} (\\d+)`, 'm').exec(text);
  return Number(m?.[1] ?? -1);
}

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  s = await serve(
    writeConfig({
      upstream: upstream.url,
      extra: 'limits: { min_body_rate_bps: 2000, body_rate_grace_ms: 600, buffer_body_bytes: 4096 }',
    }),
  );
});
afterAll(async () => {
  await s.stop();
  await upstream.close();
});

describe('slow bodies', () => {
  it('counts body_rate cuts from 0', async () => {
    expect(await bound('body_rate')).toBe(0);
  });

  it('a small body is received whole before the upstream is asked', async () => {
    const head = post('small', 1000, 'a'.repeat(500));
    const pending = raw(s.apiPort, [head, 400, 'b'.repeat(500)], {
      waitMs: 2000,
      until: (t) => t.includes('b'.repeat(500)),
    });
    await new Promise((r) => setTimeout(r, 250));
    expect(arrived('small')).toBe(0); // half the body is here, the upstream has not been asked
    const r = await pending;
    expect(responses(r.text)[0]?.status).toBe(200);
    const got = upstream.received.find((q) => q.url.endsWith('tag=small'));
    expect(got?.body.toString()).toBe('a'.repeat(500) + 'b'.repeat(500));
  });

  it('a client that declares a large body and sends one byte never reaches the upstream, and gets 408', async () => {
    const before = await bound('body_rate');
    const r = await raw(s.apiPort, [post('trickle', 1_048_576, 'x')], { waitMs: 5000 });
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(408);
    expect(JSON.parse(answer?.body ?? '{}').code).toBe('request_timeout');
    expect(r.closed).toBe(true);
    expect(arrived('trickle')).toBe(0);
    expect(await bound('body_rate')).toBe(before + 1);
  });

  it('a body that starts fast and then trickles is cut too, its upstream request ended', async () => {
    const r = await raw(s.apiPort, [post('fastslow', 1_048_576, 'y'.repeat(16_384))], {
      waitMs: 5000,
      drip: { chunk: 'z', everyMs: 100 },
    });
    expect(arrived('fastslow')).toBe(1); // past buffer_body_bytes: streamed
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(408);
    expect(r.closed).toBe(true);
  });

  it('an honest upload longer than upstream.timeout_ms is forwarded whole: the wait for the answer starts after the body', async () => {
    // timeout_ms is 2000 here; the body takes 3 s at 10 kB/s (above the minimum rate).
    const chunk = 'u'.repeat(1000);
    const parts: Array<string | number> = [post('steady', 30_000)];
    for (let i = 0; i < 30; i++) parts.push(chunk, 100);
    const r = await raw(s.apiPort, parts, { waitMs: 8000, until: (t) => t.includes(chunk.repeat(2)) });
    expect(responses(r.text)[0]?.status).toBe(200);
    expect(upstream.received.find((q) => q.url.endsWith('tag=steady'))?.body.length).toBe(30_000);
  }, 15_000);

  it("a READ key's GET with a body is refused 413 and never forwarded (the public key holds nothing)", async () => {
    const token = signLeadToken(KEYS.storefront.secret, 'lead-1');
    const get = request(
      'GET /api/v2/merchant/orders?tag=readbody HTTP/1.1',
      [
        HOST,
        ['x-apikey', KEYS.storefront.key],
        ['x-source', 'web'],
        ['x-leadtoken', token],
        ['Content-Length', '1048576'],
      ],
      'x',
    );
    const r = await raw(s.apiPort, [get], { waitMs: 3000 });
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(413);
    expect(JSON.parse(answer?.body ?? '{}').code).toBe('body_too_large');
    expect(arrived('readbody')).toBe(0);
    // Without a body, the same request is forwarded.
    const ok = await ask(s.apiPort, {
      path: '/api/v2/merchant/orders?tag=readnobody',
      headers: { 'x-apikey': KEYS.storefront.key, 'x-source': 'web', 'x-leadtoken': token },
    });
    expect(ok.status).toBe(200);
  });
});

/** Latencies (ms) of `n` sequential legitimate requests, and their 99th percentile. */
async function p99(port: number, n: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await ask(port, {
      path: '/api/v2/merchant/orders?tag=legit',
      headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
    });
    times.push(performance.now() - t0);
    expect(r.status).toBe(200);
  }
  times.sort((a, b) => a - b);
  return times[Math.ceil(n * 0.99) - 1] ?? 0;
}

describe('300 slow bodies do not move a legitimate client', () => {
  let d: Served;
  let up: RecordingUpstream;
  beforeAll(async () => {
    up = await startRecordingUpstream();
    // Default limits; a small upstream pool so that holding it would show at once.
    d = await serve(writeConfig({ upstream: up.url, upstreamFields: 'max_sockets: 16' }));
  });
  afterAll(async () => {
    await d.stop();
    await up.close();
  });

  it('public key (GET with a body) and write key (POST declaring 1 MiB), one byte each', async () => {
    const base = await p99(d.apiPort, 200);
    const token = signLeadToken(KEYS.storefront.secret, 'lead-1');
    const sockets: net.Socket[] = [];
    const open = (text: string) =>
      new Promise<void>((resolve) => {
        const c = net.connect(d.apiPort, '127.0.0.1', () => {
          c.write(text);
          resolve();
        });
        c.on('error', () => {});
        c.resume();
        sockets.push(c);
      });
    for (let i = 0; i < 150; i++) {
      await open(
        request(
          'GET /api/v2/merchant/orders HTTP/1.1',
          [
            HOST,
            ['x-apikey', KEYS.storefront.key],
            ['x-source', 'web'],
            ['x-leadtoken', token],
            ['Content-Length', '1048576'],
          ],
          'x',
        ),
      );
      await open(post('slow', 1_048_576, 'x'));
    }
    const under = await p99(d.apiPort, 200);
    for (const c of sockets) c.destroy();
    console.log(`legitimate p99: ${base.toFixed(1)} ms alone, ${under.toFixed(1)} ms beside 300 slow bodies`);
    expect(up.arrived.filter((r) => r.url.endsWith('/actions?tag=slow')).length).toBe(0);
    // The bound the issue sets is 100 ms; the slack is for a shared machine (before: ~29 s).
    expect(under - base).toBeLessThan(1_000);
  }, 60_000);
});
