import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePki, type TestPki } from '../helpers/certs.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { h2Answer } from '../helpers/h2-client.js';
import { connectH2, FLAG, frame, rapidReset, request, TYPE } from '../helpers/h2-frames.js';
import { type Served, serve } from '../helpers/process.js';
import { responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * Hostile h2 input against a real `leadgate serve` process (a crash is a process exit, which an
 * in-process gateway would hide inside the test runner).
 */
let upstream: RecordingUpstream;
let pki: TestPki;
let ca: string;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  pki = makePki();
  ca = readFileSync(pki.caCert, 'utf8');
});
afterAll(() => upstream.close());

async function start(name: string, listenExtra = '', extra = ''): Promise<Served> {
  const pair = pki.server(name);
  return serve(
    writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }${listenExtra}`,
      extra,
    }),
  );
}

/** One h2 request with Node's client; its status and body, or -1 when the stream is reset. */
function h2Ask(port: number, headers: http2.OutgoingHttpHeaders): Promise<{ status: number; body: string }> {
  const session = http2.connect(`https://localhost:${port}`, { ca, host: '127.0.0.1' } as never);
  const failed = new Promise<{ status: number; body: string }>((resolve) =>
    session.on('error', () => resolve({ status: -1, body: '' })),
  );
  const stream = session.request(headers);
  stream.end();
  return Promise.race([h2Answer(stream), failed]).finally(() => session.destroy());
}

/** The process still answers a keyed h2 request and an HTTP/1.1 one. */
async function stillServes(s: Served): Promise<void> {
  const h2 = await h2Ask(s.apiPort, {
    ':path': '/api/v2/merchant/orders',
    'x-apikey': KEYS.server.key,
    'x-source': 'web',
  });
  expect(h2.status).toBe(200);
  const health = await ask(s.adminPort, { path: '/healthz' });
  expect(health.status).toBe(200);
  expect(s.child.exitCode).toBeNull();
}

const uncaught = (s: Served) => s.lines.filter((l) => /uncaught/i.test(String(l.msg)));

describe('h2 CONNECT (CONTRACT §11)', () => {
  it.each([
    ['one process', 'h2-connect', ''],
    ['workers: 2', 'h2-connect-pool', 'workers: 2'],
  ])(
    'is answered 400 bad_request on its stream and the process keeps serving (%s)',
    async (_label, name, extra) => {
      const s = await start(name, '', extra);
      try {
        for (let i = 0; i < 4; i++) {
          const answer = await h2Ask(s.apiPort, { ':method': 'CONNECT', ':authority': 'example.com:443' });
          expect(answer.status).toBe(400);
          expect(JSON.parse(answer.body).code).toBe('bad_request');
        }
        // HTTP/1.1 by ALPN on the same port: the same answer, then the connection closes
        const h1 = await new Promise<string>((resolve) => {
          const socket = tls.connect({
            host: '127.0.0.1',
            port: s.apiPort,
            ca,
            servername: 'localhost',
            ALPNProtocols: ['http/1.1'],
          });
          const chunks: Buffer[] = [];
          socket.on('data', (c: Buffer) => chunks.push(c));
          socket.on('error', () => {});
          socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
          socket.write('CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n');
          setTimeout(() => socket.destroy(), 5000);
        });
        expect(responses(h1)[0]?.status).toBe(400);
        expect(JSON.parse(responses(h1)[0]?.body ?? '{}').code).toBe('bad_request');
        await stillServes(s);
        expect(uncaught(s)).toEqual([]);
      } finally {
        await s.stop();
      }
    },
  );
});

describe('reset h2 streams on TLS + h2 listeners, with and without proxy_protocol', () => {
  const proxy = ', proxy_protocol: { from: [127.0.0.1/32], header_timeout_ms: 2000 }';
  const headers = request('/api/v2/merchant/orders', [
    ['x-apikey', KEYS.server.key],
    ['x-source', 'web'],
  ]);
  const cancel = Buffer.from([0, 0, 0, 8]);

  it.each([
    ['without', ''],
    ['with', proxy],
  ])(
    'HEADERS then RST_STREAM at once %s proxy_protocol: nothing leaves the handler, the process keeps serving',
    async (_l, listen) => {
      const s = await start(`h2-reset-${listen === '' ? 'plain' : 'proxy'}`, listen);
      try {
        for (let i = 0; i < 3; i++) {
          const conn = await connectH2(s.apiPort, ca);
          conn.send(
            frame(TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, headers),
            frame(TYPE.RST_STREAM, 0, 1, cancel),
          );
          await conn.until((f) => f.type === TYPE.GOAWAY, 300);
          conn.socket.destroy();
        }
        await stillServes(s);
        expect(uncaught(s)).toEqual([]);
      } finally {
        await s.stop();
      }
    },
  );

  it.each([
    ['without', ''],
    ['with', proxy],
  ])(
    'rapid reset is bounded %s proxy_protocol: GOAWAY or close, others served, memory bounded',
    async (_l, listen) => {
      const s = await start(`h2-rapid-${listen === '' ? 'plain' : 'proxy'}`, listen);
      try {
        const rssOf = async () => {
          const m = await ask(s.adminPort, { path: '/metrics' });
          return Number(/^process_resident_memory_bytes (\S+)$/m.exec(m.text)?.[1] ?? 0);
        };
        const rssBefore = await rssOf();
        const arrivedBefore = upstream.arrived.length;
        const conn = await connectH2(s.apiPort, ca);
        await rapidReset(conn, headers);
        const goaway = conn.frames.some((f) => f.type === TYPE.GOAWAY);
        expect(goaway || conn.socket.destroyed).toBe(true);
        conn.socket.destroy();
        // every upstream connection is free again: a reset stream holds none (the pool has 256)
        for (let i = 0; i < 3; i++) await stillServes(s);
        expect(uncaught(s)).toEqual([]);
        expect(upstream.arrived.length - arrivedBefore).toBeLessThan(20_000);
        const rssAfter = await rssOf();
        if (rssBefore > 0 && rssAfter > 0) expect((rssAfter - rssBefore) / 2 ** 20).toBeLessThan(256);
        process.stdout.write(
          `rapid reset (${_l} proxy_protocol): ${upstream.arrived.length - arrivedBefore} of 20000 reached the upstream; rss ${(rssBefore / 2 ** 20).toFixed(0)} -> ${(rssAfter / 2 ** 20).toFixed(0)} MiB\n`,
        );
      } finally {
        await s.stop();
      }
    },
  );

  it.each(['undici', 'http-proxy'] as const)(
    'a stream reset mid-answer stops the upstream request (its pooled connection is not held; %s)',
    async (engine) => {
      const streaming = await startRecordingUpstream();
      let upstreamClosed = false;
      streaming.behave((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const drip = setInterval(() => res.write('x'.repeat(1024)), 20);
        res.on('close', () => {
          clearInterval(drip);
          upstreamClosed = true;
        });
      });
      const pair = pki.server(`h2-reset-mid-${engine}`);
      const s = await serve(
        writeConfig({
          upstream: streaming.url,
          engine,
          listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
        }),
      );
      try {
        const conn = await connectH2(s.apiPort, ca);
        conn.send(frame(TYPE.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, headers));
        expect(await conn.until((f) => f.type === TYPE.DATA && f.stream === 1)).not.toBeNull();
        conn.send(frame(TYPE.RST_STREAM, 0, 1, cancel));
        for (let i = 0; i < 100 && !upstreamClosed; i++) await new Promise((r) => setTimeout(r, 50));
        expect(upstreamClosed).toBe(true);
        conn.socket.destroy();
        expect(s.child.exitCode).toBeNull();
      } finally {
        await s.stop();
        await streaming.close();
      }
    },
  );
});
