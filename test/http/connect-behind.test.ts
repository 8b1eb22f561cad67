import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask, scrape } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { serve } from '../helpers/process.js';
import { raw, request, responses } from '../helpers/raw.js';

/**
 * A CONNECT is refused with 400 (src/http/connection.ts). Node hands its socket over without the
 * listeners it keeps on every other connection (error, drain, end), so what those did is the
 * guard's: a reset must not crash the process, and the answers a CONNECT waits behind must still
 * flow and still be given up when their client goes. Raw sockets, a real `leadgate serve` for the
 * crash and a real gateway in this process for the rest, both engines.
 */
const BIG = 1_000_000;
const CONNECT = 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n';
const get = (path: string) =>
  request(`GET /api/v2/merchant/${path} HTTP/1.1`, [
    ['Host', '127.0.0.1'],
    ['x-apikey', KEYS.server.key],
    ['x-source', 'web'],
  ]);

describe.each(['undici', 'http-proxy'] as const)('a CONNECT behind a request, on %s', (engine) => {
  let upstream: http.Server;
  let port = 0;
  /** Requests to /hold the upstream has seen closed by the gateway before it answered them. */
  let heldClosed = 0;
  let heldArrived = 0;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/api/v2/merchant/big')) {
        res.writeHead(200, { 'content-length': String(BIG) });
        res.end(Buffer.alloc(BIG, 'a'));
      } else if (req.url?.startsWith('/api/v2/merchant/hold')) {
        heldArrived++;
        res.on('close', () => {
          if (!res.writableEnded) heldClosed++;
        });
      } else {
        setTimeout(() => res.end('ok'), 200);
      }
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    port = (upstream.address() as net.AddressInfo).port;
    gw = await startTestGateway(
      writeConfig({ upstream: `http://127.0.0.1:${port}`, engine, timeoutMs: 30_000 }),
    );
  });
  afterAll(async () => {
    await gw.close();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it('a CONNECT whose client resets the connection does not take `leadgate serve` down', async () => {
    const served = await serve(
      writeConfig({ upstream: `http://127.0.0.1:${port}`, engine, timeoutMs: 30_000 }),
    );
    try {
      // alone (reset while its 400 lingers), and waiting behind an answer (written once it is gone)
      for (const parts of [[CONNECT], [get('slow'), CONNECT]]) {
        const socket = net.connect(served.apiPort, '127.0.0.1');
        socket.on('error', () => {});
        await new Promise((r) => socket.once('connect', r));
        socket.write(parts.join(''));
        await new Promise((r) => setTimeout(r, 100));
        socket.resetAndDestroy();
        await new Promise((r) => setTimeout(r, 300));
        const after = await ask(served.apiPort, { path: '/api/v2/merchant/orders', headers: {} });
        expect(after.status).toBe(401);
      }
      expect(served.child.exitCode).toBeNull();
    } finally {
      await served.stop();
    }
  });

  it('the answer it waits behind goes out whole, however large, then its 400', async () => {
    const r = await raw(gw.apiPort, [get('big') + CONNECT], { waitMs: 20_000 });
    const answers = responses(r.text);
    expect(answers.map((a) => a.status)).toEqual([200, 400]);
    expect(answers[0]?.body.length).toBe(BIG);
    expect(r.closed).toBe(true);
  });

  it('a client that ends its side while it waits is gone: the upstream request is given up', async () => {
    const arrived = heldArrived;
    const closed = heldClosed;
    const socket = net.connect(gw.apiPort, '127.0.0.1');
    socket.on('error', () => {});
    socket.resume();
    await new Promise((r) => socket.once('connect', r));
    socket.write(get('hold') + CONNECT);
    while (heldArrived === arrived) await new Promise((r) => setTimeout(r, 10));
    // a byte after the CONNECT, in a packet of its own, must not hide the end that follows
    socket.write('x');
    await new Promise((r) => setTimeout(r, 50));
    socket.end();
    // given up long before upstream.timeout_ms (30 s), which would end it otherwise
    for (let i = 0; i < 500 && heldClosed === closed; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heldClosed - closed).toBe(1);
    for (let i = 0; i < 100; i++) {
      if ((await scrape(gw.adminPort)).get('leadgate_inflight_requests') === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await scrape(gw.adminPort)).get('leadgate_inflight_requests')).toBe(0);
    socket.destroy();
  });
});
