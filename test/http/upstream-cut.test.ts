import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePki } from '../helpers/certs.js';
import { scrape } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { requires, runs } from '../helpers/optional.js';
import { type Served, serve } from '../helpers/process.js';
import { request } from '../helpers/raw.js';

/**
 * An upstream that dies after its response headers and part of its body (a crash, an OOM kill)
 * is the upstream's failure, not the client's: the client's answer is cut so that no client can
 * take it for whole (HTTP/1.1: the connection closes before the body's end; HTTP/2: the stream is
 * reset with INTERNAL_ERROR, never NO_ERROR, which Node's client reads as "done"), and the request is counted and
 * logged as 502 `upstream_unavailable` (what the shipped UpstreamFailing alert watches), not as
 * the client's 499 `client_closed`. Both engines; a real leadgate process over TLS, a real backend
 * that resets its socket mid-body, raw HTTP/1.1 and HTTP/2 clients.
 */
const pki = makePki();
const ca = readFileSync(pki.caCert, 'utf8');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Answers 200 and part of a body, chunked or with a content-length it never reaches, then resets. */
async function startCuttingBackend() {
  const server = http.createServer((req, res) => {
    req.resume();
    if (req.url?.includes('hints')) {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      res.end('hello');
      return;
    }
    const framing = req.url?.includes('length') ? { 'content-length': '100000' } : {};
    res.writeHead(200, { 'content-type': 'text/plain', ...framing });
    res.write('part of the answer');
    if (req.url?.includes('stall')) return; // sends nothing more, holds the connection
    setTimeout(() => req.socket.resetAndDestroy(), 50);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const series = (status: number, code: string) =>
  `leadgate_requests_total{status="${status}",code="${code}",key="server"}`;

for (const engine of ['undici', 'http-proxy'] as const) {
  describe(`an upstream that resets mid-answer (${engine})`, () => {
    let backend: Awaited<ReturnType<typeof startCuttingBackend>>;
    let s: Served;
    /** The same on a plain-text listener. */
    let plain: Served;
    beforeAll(async () => {
      backend = await startCuttingBackend();
      const pair = pki.server(`upstream-cut-${engine}`);
      s = await serve(
        writeConfig({
          upstream: backend.url,
          engine,
          timeoutMs: 1_000,
          extra: 'log: { requests: all }\nlimits: { send_timeout_ms: 500 }',
          listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
        }),
      );
      plain = await serve(writeConfig({ upstream: backend.url, engine, timeoutMs: 1_000 }));
    });
    afterAll(async () => {
      await plain.stop();
      await s.stop();
      await backend.close();
    });

    /** How `send` moved `cutSeries` (502 upstream_unavailable by default) and 499 client_closed. */
    async function counted(send: () => Promise<unknown>, cutSeries = series(502, 'upstream_unavailable')) {
      const read = async () => {
        const m = await scrape(s.adminPort);
        return [m.get(cutSeries) ?? 0, m.get(series(499, 'client_closed')) ?? 0] as const;
      };
      const [cut0, left0] = await read();
      await send();
      for (let i = 0; i < 100; i++) {
        const [cut, left] = await read();
        if (cut !== cut0 || left !== left0) return { cut: cut - cut0, clientClosed: left - left0 };
        await sleep(20);
      }
      return { cut: 0, clientClosed: 0 };
    }

    /** One HTTP/1.1 GET over TLS with `query`, read until the connection closes: all it received. */
    const h1 = (query: string) =>
      new Promise<string>((resolve) => {
        let text = '';
        const t = tls.connect({
          host: '127.0.0.1',
          port: s.apiPort,
          ca,
          servername: 'localhost',
          ALPNProtocols: ['http/1.1'],
        });
        t.on('data', (c: Buffer) => {
          text += c.toString('latin1');
        });
        t.on('error', () => resolve(text));
        t.on('close', () => resolve(text));
        t.write(
          request(`GET /api/v2/merchant/orders?${query} HTTP/1.1`, [
            ['Host', 'localhost'],
            ['x-apikey', KEYS.server.key],
            ['x-source', 'web'],
          ]),
        );
      });

    it('HTTP/1.1: an upstream that sends no more of its body for upstream.timeout_ms: cut, counted 504 upstream_timeout', async () => {
      let text = '';
      const moved = await counted(
        async () => {
          text = await h1('stall');
        },
        series(504, 'upstream_timeout'),
      );
      expect(text.startsWith('HTTP/1.1 200')).toBe(true);
      expect(text.endsWith('0\r\n\r\n')).toBe(false);
      expect(moved).toEqual({ cut: 1, clientClosed: 0 });
    });

    it('HTTP/1.0, plain text: the cut answer ends in a reset, not the close that ends a whole one', async () => {
      const before = (await scrape(plain.adminPort)).get(series(502, 'upstream_unavailable')) ?? 0;
      const ending = await new Promise<string>((resolve) => {
        const socket = net.connect(plain.apiPort, '127.0.0.1');
        socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
        socket.on('end', () => resolve('end'));
        socket.resume();
        socket.write(
          request('GET /api/v2/merchant/orders?chunked HTTP/1.0', [
            ['Host', 'localhost'],
            ['x-apikey', KEYS.server.key],
            ['x-source', 'web'],
          ]),
        );
      });
      // an HTTP/1.0 answer is framed by the close: before, a plain close (FIN) ended the cut one too
      expect(ending).toBe('ECONNRESET');
      for (let i = 0; i < 100; i++) {
        const now = (await scrape(plain.adminPort)).get(series(502, 'upstream_unavailable')) ?? 0;
        if (now !== before) break;
        await sleep(20);
      }
      expect((await scrape(plain.adminPort)).get(series(502, 'upstream_unavailable'))).toBe(before + 1);
    });

    it('HTTP/1.1: an informational answer (103 Early Hints) is not passed on; the final one is, whole', async () => {
      const text = await h1('hints');
      expect(text.startsWith('HTTP/1.1 200')).toBe(true);
      expect(text).toContain('hello');
      expect(text).not.toContain('103');
    });

    for (const framing of ['chunked', 'length'] as const) {
      it(`HTTP/1.1, ${framing}: the connection closes before the body's end; counted 502 upstream_unavailable`, async () => {
        let text = '';
        const moved = await counted(async () => {
          text = await h1(framing);
        });
        expect(text.startsWith('HTTP/1.1 200')).toBe(true);
        expect(text).toContain('part of the answer');
        // no terminating chunk: a client cannot take the cut answer for whole
        expect(text.endsWith('0\r\n\r\n')).toBe(false);
        expect(moved).toEqual({ cut: 1, clientClosed: 0 });
        const line = await s.waitFor((l) => l.msg === 'request' && l.status === 502);
        expect([line.code, line.key_name]).toEqual(['upstream_unavailable', 'server']);
        expect(typeof line.upstream_ms).toBe('number');
      });
    }

    /** One h2 GET with `query`: its status, body, whether it ended cleanly and its reset code. */
    async function h2Get(query: string) {
      const session = http2.connect(`https://localhost:${s.apiPort}`, {
        ca,
        servername: 'localhost',
        host: '127.0.0.1',
      } as never);
      session.on('error', () => {});
      try {
        return await new Promise<{ status: number; ended: boolean; rstCode: number; body: string }>(
          (resolve) => {
            const outcome = { status: 0, ended: false, rstCode: -1, body: '' };
            const stream = session.request({
              ':path': `/api/v2/merchant/orders?${query}`,
              'x-apikey': KEYS.server.key,
              'x-source': 'web',
            });
            stream.on('response', (h) => {
              outcome.status = Number(h[':status']);
            });
            stream.on('data', (c: Buffer) => {
              outcome.body += c.toString();
            });
            stream.on('end', () => {
              outcome.ended = true;
            });
            stream.on('error', () => {});
            stream.on('close', () => resolve({ ...outcome, rstCode: stream.rstCode ?? -1 }));
          },
        );
      } finally {
        session.close();
      }
    }

    it('HTTP/2: the stream is reset with INTERNAL_ERROR, not NO_ERROR; counted 502 upstream_unavailable', async () => {
      let outcome = { status: 0, ended: false, rstCode: -1, body: '' };
      const moved = await counted(async () => {
        outcome = await h2Get('chunked');
      });
      expect(outcome.status).toBe(200);
      expect(outcome.body).toContain('part of the answer');
      // before: the stream ended (NO_ERROR) and the client held a cut body as the whole answer
      expect(outcome.ended).toBe(false);
      expect(outcome.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
      expect(moved).toEqual({ cut: 1, clientClosed: 0 });
    });

    it("HTTP/2: an upstream that stalls mid-answer past the stream's idle bound is the upstream's: INTERNAL_ERROR, 504", async () => {
      // send_timeout_ms (the idle-stream bound) is shorter than upstream.timeout_ms here
      let outcome = { status: 0, ended: false, rstCode: -1, body: '' };
      const moved = await counted(
        async () => {
          outcome = await h2Get('stall');
        },
        series(504, 'upstream_timeout'),
      );
      expect([outcome.status, outcome.ended]).toEqual([200, false]);
      // before: CANCEL, which Node's client reads as a whole answer, counted as the client's 499
      expect(outcome.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
      expect(moved).toEqual({ cut: 1, clientClosed: 0 });
    });

    it.runIf(requires('curl', runs('curl', ['--version']), 'Debian: curl'))(
      'curl --http2, as a user runs it, fails the transfer rather than keep a cut body',
      async () => {
        const host = `localhost:${s.apiPort}`;
        const exit = await new Promise<number | null>((resolve) => {
          const args = ['-s', '-o', '/dev/null', '--max-time', '10', '--http2', '--cacert', pki.caCert];
          args.push(
            '--resolve',
            `${host}:127.0.0.1`,
            '-H',
            `x-apikey: ${KEYS.server.key}`,
            '-H',
            'x-source: web',
          );
          execFile('curl', [...args, `https://${host}/api/v2/merchant/orders?chunked`]).on('exit', resolve);
        });
        expect(exit).toBe(92); // CURLE_HTTP2_STREAM: "stream error in the HTTP/2 framing layer"
      },
    );
  });
}
