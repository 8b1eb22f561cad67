import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePki } from '../helpers/certs.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { socketsTo } from '../helpers/flood.js';
import { h2Status } from '../helpers/h2-client.js';
import { type Served, serve } from '../helpers/process.js';
import { request } from '../helpers/raw.js';

/**
 * A client that does not read a large answer holds no upstream socket past
 * `limits.send_timeout_ms` (CONTRACT §9 "Upstream sockets"; issue 47 point 3): its connection
 * (HTTP/1.1) or stream (HTTP/2) and the upstream request are closed, counted as
 * `leadgate_connection_bounds_total{bound="send_timeout"}`. A real leadgate process, a backend
 * answering 32 MiB, raw sockets that stop reading and h2 sessions with a window of 0.
 */
const CLIENTS = 3;
const SEND_TIMEOUT_MS = 1_000;
const BIG = Buffer.alloc(32 * 2 ** 20, 1);

interface Backend {
  readonly url: string;
  readonly port: number;
  readonly arrived: Map<string, number>;
  close(): Promise<void>;
}

async function startBackend(): Promise<Backend> {
  const arrived = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const tag = new URL(req.url ?? '/', 'http://x').searchParams.get('tag') ?? '';
    arrived.set(tag, (arrived.get(tag) ?? 0) + 1);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(tag.startsWith('big') ? BIG : 'small');
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    arrived,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(test: () => boolean, ms: number): Promise<boolean> {
  const t0 = performance.now();
  while (!test() && performance.now() - t0 < ms) await sleep(10);
  return test();
}

async function sendTimeouts(s: Served): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.adminPort}/metrics`)).text();
  const m = /^leadgate_connection_bounds_total\{bound="send_timeout"\} (\d+)/m.exec(text);
  return Number(m?.[1] ?? Number.NaN);
}

const pki = makePki();
const ca = readFileSync(pki.caCert, 'utf8');

for (const engine of ['undici', 'http-proxy'] as const) {
  describe(`an answer the client does not read: send_timeout_ms (${engine})`, () => {
    let backend: Backend;
    let s: Served;
    beforeAll(async () => {
      backend = await startBackend();
      const pair = pki.server(`send-timeout-${engine}`);
      s = await serve(
        writeConfig({
          upstream: backend.url,
          engine,
          // As many upstream sockets as non-reading clients: held, they would leave none.
          upstreamFields: `max_sockets: ${CLIENTS}`,
          timeoutMs: 5_000,
          extra: `limits: { send_timeout_ms: ${SEND_TIMEOUT_MS} }`,
          listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
        }),
      );
    });
    afterAll(async () => {
      await s.stop();
      await backend.close();
    });

    const pid = () => s.child.pid ?? 0;

    /** A legitimate h2 request, read whole: its status. */
    async function legit(tag: string): Promise<number> {
      const session = http2.connect(`https://localhost:${s.apiPort}`, {
        ca,
        servername: 'localhost',
        host: '127.0.0.1',
      } as never);
      try {
        return await h2Status(session, `/api/v2/merchant/orders?tag=${tag}`);
      } finally {
        session.close();
      }
    }

    it('HTTP/1.1: clients that stop reading are closed with their upstream requests; a later request is served', async () => {
      const counted = await sendTimeouts(s);
      const tag = `big-h1-${engine}`;
      const clients = Array.from({ length: CLIENTS }, () => {
        const client = net.connect(s.apiPort, '127.0.0.1');
        client.on('error', () => {});
        return client;
      });
      // TLS is on: an HTTP/1.1 client over TLS, reading nothing once the answer starts.
      const tls = await import('node:tls');
      const secure = clients.map((raw) => {
        const t = tls.connect({ socket: raw, ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
        t.on('error', () => {});
        t.write(
          request(`GET /api/v2/merchant/orders?tag=${tag} HTTP/1.1`, [
            ['Host', 'localhost'],
            ['x-apikey', KEYS.server.key],
            ['x-source', 'web'],
          ]),
        );
        t.once('data', () => t.pause());
        return t;
      });
      expect(await until(() => backend.arrived.get(tag) === CLIENTS, 5_000)).toBe(true);
      expect(socketsTo(pid(), backend.port)).toBe(CLIENTS);
      const t0 = performance.now();
      // Released at the send timeout; without it, held for as long as the clients like.
      expect(await until(() => socketsTo(pid(), backend.port) === 0, SEND_TIMEOUT_MS + 5_000)).toBe(true);
      console.log(`${engine} h1: upstream sockets 0 after ${(performance.now() - t0).toFixed(0)} ms`);
      for (const raw of clients) {
        expect(await until(() => socketsTo(pid(), raw.localPort ?? 0) === 0, 2_000)).toBe(true);
      }
      expect(await sendTimeouts(s)).toBe(counted + CLIENTS);
      expect(await legit(`small-h1-${engine}`)).toBe(200);
      for (const t of secure) t.destroy();
    }, 30_000);

    it('HTTP/2: streams with a window of 0 are reset with their upstream requests; a later request is served', async () => {
      const counted = await sendTimeouts(s);
      const tag = `big-h2-${engine}`;
      const sessions = Array.from({ length: CLIENTS }, () => {
        const session = http2.connect(`https://localhost:${s.apiPort}`, {
          ca,
          servername: 'localhost',
          host: '127.0.0.1',
          settings: { initialWindowSize: 0 },
        } as never);
        session.on('error', () => {});
        return session;
      });
      const streams = sessions.map((session) => {
        const stream = session.request({
          ':path': `/api/v2/merchant/orders?tag=${tag}`,
          'x-apikey': KEYS.server.key,
          'x-source': 'web',
        });
        stream.on('error', () => {});
        return stream;
      });
      expect(await until(() => backend.arrived.get(tag) === CLIENTS, 5_000)).toBe(true);
      const t0 = performance.now();
      expect(await until(() => socketsTo(pid(), backend.port) === 0, SEND_TIMEOUT_MS + 5_000)).toBe(true);
      console.log(`${engine} h2: upstream sockets 0 after ${(performance.now() - t0).toFixed(0)} ms`);
      expect(await until(() => streams.every((st) => st.closed), 2_000)).toBe(true);
      for (const st of streams) expect(st.rstCode).not.toBe(http2.constants.NGHTTP2_NO_ERROR);
      expect(await sendTimeouts(s)).toBe(counted + CLIENTS);
      expect(await legit(`small-h2-${engine}`)).toBe(200);
      for (const session of sessions) session.destroy();
    }, 30_000);
  });
}
