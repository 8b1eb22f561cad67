import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import { makePki, type TestPki } from '../helpers/certs.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { h2Answer, h2Status } from '../helpers/h2-client.js';
import { block, connectH2, FLAG, frame, rapidReset, request, TYPE } from '../helpers/h2-frames.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/** curl, as a user would run it: the status line and headers (-i), then the body. */
function curl(args: readonly string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile('curl', ['-s', '-i', '--max-time', '10', ...args], (_err, stdout) => resolve(stdout));
  });
}

let upstream: RecordingUpstream;
let pki: TestPki;
let gw: Gateway;
let ca: string;
let base: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  pki = makePki();
  const pair = pki.server('h2');
  ca = readFileSync(pki.caCert, 'utf8');
  gw = await startTestGateway(
    writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
      extra: `rate_limits:
  policies:
    - { name: per-key, by: key, limit: 10000, window_s: 60 }`,
    }),
  );
  base = `https://localhost:${gw.apiPort}`;
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const keyArgs = ['-H', `x-apikey: ${KEYS.server.key}`, '-H', 'x-source: web'];

describe('HTTP/2 over TLS (CONTRACT §11)', () => {
  it('serves many concurrent streams of one session, each its own exchange (no HTTP/1.1 pipeline bound on h2)', async () => {
    const session = http2.connect(base, { ca, servername: 'localhost', host: '127.0.0.1' } as never);
    try {
      const one = () => h2Status(session, '/api/v2/merchant/orders');
      // More streams at once than limits.max_pipelined_requests (16): the HTTP/1.1 connection guard
      // would hold the shared session socket, which Node forbids a stream to pause.
      const statuses = await Promise.all(Array.from({ length: 40 }, one));
      expect(statuses).toEqual(Array.from({ length: 40 }, () => 200));
    } finally {
      session.close();
    }
  });

  it('answers curl --http2 as it answers HTTP/1.1: problem+json, RateLimit fields, X-Request-Id; the upstream hears HTTP/1.1', async () => {
    const common = ['--cacert', pki.caCert, '--resolve', `localhost:${gw.apiPort}:127.0.0.1`];
    const h2 = await curl(['--http2', ...common, ...keyArgs, `${base}/api/v2/merchant/orders?x=1`]);
    const h1 = await curl(['--http1.1', ...common, ...keyArgs, `${base}/api/v2/merchant/orders?x=1`]);
    expect(h2, h2).toMatch(/^HTTP\/2 200/);
    expect(h1).toMatch(/^HTTP\/1\.1 200/);
    const names = (text: string) =>
      text
        .split('\r\n\r\n')[0]
        ?.split('\r\n')
        .slice(1)
        .map((l) => l.split(':')[0]?.toLowerCase())
        .filter((n) => n !== 'connection' && n !== 'keep-alive' && n !== 'transfer-encoding')
        .sort();
    expect(names(h2)).toEqual(names(h1));
    expect(h2).toMatch(/\r\nx-request-id: \S+/i);
    expect(h2).toMatch(/\r\nratelimit-policy: /i);
    const received = upstream.received.at(-2);
    expect(received?.url).toBe('/api/v2/merchant/orders?x=1');
    expect(received?.headers['x-forwarded-proto']).toBe('https');
    expect(received?.headers['x-api-key-name']).toBe('server');

    const refused = await curl(['--http2', ...common, `${base}/api/v2/merchant/orders`]);
    expect(refused).toMatch(/^HTTP\/2 401/);
    expect(refused).toMatch(/content-type: application\/problem\+json/i);
    expect(refused).toContain('"code":"missing_api_key"');
    const badPath = await curl([
      '--http2',
      '--path-as-is',
      ...common,
      ...keyArgs,
      `${base}/api/v2/merchant/../merchant/orders`,
    ]);
    expect(badPath).toMatch(/^HTTP\/2 400/);
  });

  it('forwards h2 requests with the http-proxy engine too', async () => {
    const pair = pki.server('h2-http-proxy');
    const other = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        engine: 'http-proxy',
        listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
      }),
    );
    try {
      const url = `https://localhost:${other.apiPort}/api/v2/merchant/orders?engine=http-proxy`;
      const common = ['--cacert', pki.caCert, '--resolve', `localhost:${other.apiPort}:127.0.0.1`];
      const writer = ['-H', `x-apikey: ${KEYS.write.key}`, '-H', 'x-source: web'];
      const out = await curl(['--http2', ...common, ...writer, '--data', 'hello', url]);
      expect(
        out,
        other.logs.lines.filter((l) => l.includes('"error"') || l.includes('"err"')).join('\n'),
      ).toMatch(/^HTTP\/2 200/);
      expect(out).toContain('hello');
      const received = upstream.received.at(-1);
      expect(received?.url).toBe('/api/v2/merchant/orders?engine=http-proxy');
      expect(received?.body.toString()).toBe('hello');
      expect(received?.headers['x-forwarded-proto']).toBe('https');
    } finally {
      await other.close();
    }
  });

  it('keeps the §10 header rules on h2: every spelling of an identity or credential header is removed', async () => {
    const conn = await connectH2(gw.apiPort, ca);
    conn.send(
      frame(
        TYPE.HEADERS,
        FLAG.END_HEADERS | FLAG.END_STREAM,
        1,
        request('/api/v2/merchant/orders', [
          ['x-apikey', KEYS.server.key],
          ['x-source', 'web'],
          ['x-lead-id', 'forged'],
          ['x_lead_id', 'forged'],
          ['x.lead.id', 'forged'],
          ['x-api-key-name', 'forged'],
        ]),
      ),
    );
    const answer = await conn.until((f) => f.type === TYPE.HEADERS && f.stream === 1);
    // HPACK: 0x88 is the static table's ":status: 200"
    expect(answer?.payload[0]).toBe(0x88);
    await conn.until((f) => f.stream === 1 && (f.flags & FLAG.END_STREAM) !== 0);
    conn.socket.destroy();
    const headers = upstream.received.at(-1)?.headers ?? {};
    expect(headers['x-api-key-name']).toBe('server');
    for (const name of Object.keys(headers)) expect(name.replace(/[^a-z0-9]/g, '')).not.toBe('xleadid');
  });

  it('refuses RFC 9113 §8.2.2 connection-specific fields as a stream error, never forwarded', async () => {
    const before = upstream.arrived.length;
    for (const field of [
      ['connection', 'x-lead-id'],
      ['keep-alive', '5'],
      ['proxy-connection', 'keep-alive'],
      ['transfer-encoding', 'chunked'],
      ['upgrade', 'websocket'],
      ['te', 'gzip'],
    ] as const) {
      const conn = await connectH2(gw.apiPort, ca);
      conn.send(
        frame(
          TYPE.HEADERS,
          FLAG.END_HEADERS | FLAG.END_STREAM,
          1,
          request('/api/v2/merchant/orders', [['x-apikey', KEYS.server.key], ['x-source', 'web'], field]),
        ),
      );
      const reset = await conn.until(
        (f) => (f.type === TYPE.RST_STREAM && f.stream === 1) || f.type === TYPE.GOAWAY,
      );
      expect(reset, field[0]).not.toBeNull();
      expect(reset?.payload.readUInt32BE(reset.type === TYPE.GOAWAY ? 4 : 0), field[0]).toBe(1); // PROTOCOL_ERROR
      expect(
        conn.frames.some((f) => f.type === TYPE.HEADERS && f.stream === 1),
        field[0],
      ).toBe(false);
      conn.socket.destroy();
    }
    // te: trailers is the one allowed
    const conn = await connectH2(gw.apiPort, ca);
    conn.send(
      frame(
        TYPE.HEADERS,
        FLAG.END_HEADERS | FLAG.END_STREAM,
        1,
        request('/api/v2/merchant/orders', [
          ['x-apikey', KEYS.server.key],
          ['x-source', 'web'],
          ['te', 'trailers'],
        ]),
      ),
    );
    expect(await conn.until((f) => f.type === TYPE.HEADERS && f.stream === 1)).not.toBeNull();
    conn.socket.destroy();
    expect(upstream.arrived.length).toBe(before + 1);
  });
});

describe('stream floods are bounded (CVE-2023-44487, CVE-2024-27316)', () => {
  /** Requests on other connections while `flood` runs: every one must be answered. */
  async function servedDuring(flood: Promise<unknown>): Promise<{ ok: number; failed: number }> {
    let done = false;
    void flood.finally(() => {
      done = true;
    });
    let ok = 0;
    let failed = 0;
    while (!done || ok === 0) {
      const r = await ask(gw.adminPort, { path: '/healthz' }).catch(() => null);
      if (r?.status === 200) ok++;
      else failed++;
    }
    return { ok, failed };
  }

  it('rapid reset: HEADERS then RST_STREAM, over and over, ends in GOAWAY; others are served, memory bounded', async () => {
    const rssBefore = process.memoryUsage().rss;
    const arrivedBefore = upstream.arrived.length;
    const conn = await connectH2(gw.apiPort, ca);
    const headers = request('/api/v2/merchant/orders', [
      ['x-apikey', KEYS.server.key],
      ['x-source', 'web'],
    ]);
    const flood = rapidReset(conn, headers);
    const served = await servedDuring(flood);
    expect(served.failed).toBe(0);
    const goaway = conn.frames.find((f) => f.type === TYPE.GOAWAY);
    expect(goaway === undefined ? conn.socket.destroyed : true).toBe(true);
    conn.socket.destroy();
    // far fewer requests reached the upstream than were sent (20,000)
    expect(upstream.arrived.length - arrivedBefore).toBeLessThan(20_000);
    const grew = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    expect(grew).toBeLessThan(256);
    process.stdout.write(
      `rapid reset: ${upstream.arrived.length - arrivedBefore} of 20000 streams reached the upstream; rss +${grew.toFixed(0)} MiB\n`,
    );
  });

  it('CONTINUATION flood: a header block that never ends is cut off; others are served, memory bounded', async () => {
    const rssBefore = process.memoryUsage().rss;
    const conn = await connectH2(gw.apiPort, ca);
    const junk = block(Array.from({ length: 50 }, (_, i) => [`x-junk-${i}`, 'a'.repeat(300)] as const));
    conn.send(frame(TYPE.HEADERS, 0, 1, request('/api/v2/merchant/orders')));
    let sent = 0;
    const flood = (async () => {
      while (!conn.socket.destroyed && sent < 200 * 2 ** 20) {
        const batch = Array.from({ length: 50 }, () => frame(TYPE.CONTINUATION, 0, 1, junk));
        sent += batch.reduce((n, b) => n + b.length, 0);
        if (!conn.send(...batch)) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setImmediate(r));
      }
    })();
    const served = await servedDuring(flood);
    expect(served.failed).toBe(0);
    expect(conn.socket.destroyed).toBe(true);
    expect(sent).toBeLessThan(200 * 2 ** 20);
    const grew = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    expect(grew).toBeLessThan(256);
    process.stdout.write(
      `continuation flood: cut off after ${(sent / 2 ** 20).toFixed(1)} MiB sent; rss +${grew.toFixed(0)} MiB\n`,
    );
  });
});

describe('idle h2 connections', () => {
  it('are sent GOAWAY after limits.keepalive_timeout_ms without a frame', async () => {
    const pair = pki.server('h2-idle');
    const other = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
        extra: 'limits: { keepalive_timeout_ms: 300 }',
      }),
    );
    try {
      const conn = await connectH2(other.apiPort, ca);
      const goaway = await conn.until((f) => f.type === TYPE.GOAWAY, 5000);
      expect(goaway).not.toBeNull();
      expect(goaway?.payload.readUInt32BE(4)).toBe(0); // NO_ERROR
      conn.socket.destroy();
    } finally {
      await other.close();
    }
  });
});

describe('drain with h2 connections open (CONTRACT §7 on §11 listeners)', () => {
  it('finishes an in-flight h2 request, sends GOAWAY, and resolves', async () => {
    const pair = pki.server('h2-drain');
    const slow = await startRecordingUpstream();
    slow.behave((_req, res) => setTimeout(() => res.end('late'), 300));
    const other = await startTestGateway(
      writeConfig({
        upstream: slow.url,
        listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
      }),
    );
    const http2 = await import('node:http2');
    const session = http2.connect(`https://localhost:${other.apiPort}`, { ca, host: '127.0.0.1' } as never);
    try {
      let goaway = false;
      session.on('goaway', () => {
        goaway = true;
      });
      session.on('error', () => {});
      const stream = session.request({
        ':path': '/api/v2/merchant/orders',
        'x-apikey': KEYS.server.key,
        'x-source': 'web',
      });
      const answered = h2Answer(stream);
      stream.end();
      while (slow.arrived.length === 0) await new Promise((r) => setTimeout(r, 20));
      const drained = other.drain();
      expect(await answered).toEqual({ status: 200, body: 'late' });
      await drained;
      expect(goaway).toBe(true);
    } finally {
      session.destroy();
      await other.close();
      await slow.close();
    }
  });
});
