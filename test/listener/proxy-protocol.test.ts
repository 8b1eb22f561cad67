import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net, { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePki, type TestPki } from '../helpers/certs.js';
import { ask } from '../helpers/client.js';
import { KEYS, keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { freePort, requires, runs } from '../helpers/optional.js';
import { waitForListener } from '../helpers/proxies.js';
import { raw } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/** A key only the client 127.0.0.5 (and 10.9.9.9, the fixture's fenced key) may use. */
const EDGE_KEY = 'sk_edge_test_0000000000000000005';
const keys = `${keysYaml()}  - { name: edge, key: "${EDGE_KEY}", access_type: READ, purpose: SERVER, signing_secret: "edge-secret-000000000000000000005", origin_ips: [127.0.0.5] }\n`;

const fencedGet = (key: string = KEYS.fenced.key) =>
  `GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\nx-apikey: ${key}\r\nx-source: web\r\nConnection: close\r\n\r\n`;

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
function v2(cmd: 0 | 1, src: readonly number[]): Buffer {
  const body = Buffer.alloc(12);
  Buffer.from(src).copy(body, 0);
  Buffer.from([127, 0, 0, 1]).copy(body, 4);
  body.writeUInt16BE(40000, 8);
  body.writeUInt16BE(443, 10);
  const tlv = Buffer.from([0xea, 0x00, 0x02, 0x01, 0x02]);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(body.length + tlv.length);
  return Buffer.concat([SIG, Buffer.from([0x20 | cmd, 0x11]), len, body, tlv]);
}
const V1 = (src: string) => `PROXY TCP4 ${src} 127.0.0.1 40000 443\r\n`;

let upstream: RecordingUpstream;
let pki: TestPki;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  pki = makePki();
});
afterAll(() => upstream.close());

const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

describe('PROXY protocol on the API listener (CONTRACT §11)', () => {
  it('believes v1 and v2 headers from `from` for origin_ips and X-Forwarded-For; LOCAL and no header keep the real peer', async () => {
    const gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        keys,
        listenFields: 'proxy_protocol: { from: [127.0.0.1/32], header_timeout_ms: 500 }',
      }),
    );
    try {
      const v1 = await raw(gw.apiPort, [V1('10.9.9.9'), fencedGet()]);
      expect(status(v1.text)).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-forwarded-for']).toBe('10.9.9.9');
      // the header and the request in separate writes
      const split = await raw(gw.apiPort, [
        V1('10.9.9.9').slice(0, 9),
        50,
        V1('10.9.9.9').slice(9),
        50,
        fencedGet(),
      ]);
      expect(status(split.text)).toBe(200);
      const two = await raw(gw.apiPort, [v2(1, [10, 9, 9, 9]), fencedGet()]);
      expect(status(two.text)).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-forwarded-for']).toBe('10.9.9.9');
      expect(status((await raw(gw.apiPort, [v2(0, [10, 9, 9, 9]), fencedGet()])).text)).toBe(403);
      expect(status((await raw(gw.apiPort, [fencedGet()])).text)).toBe(403);
      expect(status((await raw(gw.apiPort, [fencedGet(KEYS.server.key)])).text)).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-forwarded-for']).toBe('127.0.0.1');

      // malformed, truncated, late: closed without a byte of answer
      const before = upstream.received.length;
      for (const parts of [
        ['PROXY TCP4 10.9.9.9 nope 1 2\r\n', fencedGet()],
        [Buffer.concat([SIG, Buffer.from([0x31, 0x11, 0, 12])]), fencedGet()],
        ['PROXY TCP4 10.9.9.9 127.0.0.1 4000'],
      ]) {
        const r = await raw(gw.apiPort, parts, { waitMs: 5000 });
        expect(r.closed).toBe(true);
        expect(r.text).toBe('');
      }
      expect(upstream.received.length).toBe(before);
      const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="api",result="ok"} 3');
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="api",result="local"} 1');
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="api",result="malformed"} 2');
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="api",result="timeout"} 1');
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="api",result="refused"} 0');
    } finally {
      await gw.close();
    }
  });

  it('survives hostile bytes in and around the header (fuzzed over real sockets): answers or closes, never dies', async () => {
    const gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        listenFields: 'proxy_protocol: { from: [127.0.0.1], header_timeout_ms: 300 }',
      }),
    );
    try {
      const valid = [Buffer.from(V1('198.51.100.4')), v2(1, [198, 51, 100, 4]), v2(0, [198, 51, 100, 4])];
      const cases = fc.record({
        base: fc.constantFrom(...valid),
        flips: fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), {
          maxLength: 3,
        }),
        cut: fc.option(fc.nat(), { nil: undefined }),
        junk: fc.uint8Array({ maxLength: 40 }),
      });
      await fc.assert(
        fc.asyncProperty(cases, async ({ base, flips, cut, junk }) => {
          const header = Buffer.from(base);
          for (const f of flips) header[f.at % header.length] = f.byte;
          const sent = cut === undefined ? header : header.subarray(0, cut % header.length);
          const before = upstream.received.length;
          const r = await raw(
            gw.apiPort,
            [Buffer.concat([sent, Buffer.from(junk)]), fencedGet(KEYS.server.key)],
            {
              waitMs: 4000,
            },
          );
          // closed (refused, or answered and closed), or still open and silent: a header that
          // swallowed part of the request leaves an HTTP connection waiting for the rest
          expect(r.text === '' || /^HTTP\/1\.1 \d{3} /.test(r.text), JSON.stringify(r)).toBe(true);
          if (!r.closed) expect(r.text).toBe('');
          if (upstream.received.length > before) {
            const xff = String(upstream.received.at(-1)?.headers['x-forwarded-for']);
            expect(isIP(xff)).toBeGreaterThan(0);
          }
        }),
        { numRuns: 150, seed: 20261128 },
      );
      // still serving
      expect(status((await raw(gw.apiPort, [V1('198.51.100.4'), fencedGet(KEYS.server.key)])).text)).toBe(
        200,
      );
    } finally {
      await gw.close();
    }
  });

  it('on the forward-auth listener too, with TLS after the header: origin_ips by the PROXY source', async () => {
    const pair = pki.server('pp-fa');
    const block = `{ host: 127.0.0.1, port: 0, proxy_protocol: { from: [127.0.0.1] }, tls: { cert_file: ${pair.cert}, key_file: ${pair.key} } }`;
    const gw = await startTestGateway(
      writeConfig({ upstream: upstream.url, extra: `forward_auth: { listen: ${block} }` }),
    );
    try {
      const ca = readFileSync(pki.caCert, 'utf8');
      const authorize = async (header: Buffer | null) => {
        const socket = net.connect(gw.forwardAuthPort ?? 0, '127.0.0.1');
        await new Promise((r) => socket.once('connect', r));
        if (header !== null) socket.write(header);
        const secure = tls.connect({ socket, ca, servername: 'localhost' });
        await new Promise((r) => secure.once('secureConnect', r));
        secure.write(
          `GET /auth HTTP/1.1\r\nHost: x\r\nx-original-method: GET\r\nx-original-uri: /api/v2/merchant/orders\r\nx-apikey: ${KEYS.fenced.key}\r\nx-source: web\r\nConnection: close\r\n\r\n`,
        );
        let text = '';
        secure.on('data', (c: Buffer) => (text += c.toString('latin1')));
        await new Promise((r) => secure.once('close', r));
        return status(text);
      };
      expect(await authorize(v2(1, [10, 9, 9, 9]))).toBe(200);
      expect(await authorize(null)).toBe(403);
      const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="forward_auth",result="ok"} 1');
      expect(metrics).toMatch(
        /leadgate_connections_total\{listener="forward_auth",protocol="h2",tls="true"\} 0/,
      );
    } finally {
      await gw.close();
    }
  });

  it('makes the PROXY source the address `by: client_ip` limits count', async () => {
    const gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        listenFields: 'proxy_protocol: { from: [127.0.0.1] }',
        extra: 'rate_limits: { policies: [{ name: per-ip, by: client_ip, limit: 1, window_s: 60 }] }',
      }),
    );
    try {
      const get = (src: string) => raw(gw.apiPort, [V1(src), fencedGet(KEYS.server.key)]);
      expect(status((await get('198.51.100.1')).text)).toBe(200);
      expect(status((await get('198.51.100.1')).text)).toBe(429);
      expect(status((await get('198.51.100.2')).text)).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('closes a connection that starts with a PROXY header from a peer not in `from`, and serves one without', async () => {
    const gw = await startTestGateway(
      writeConfig({ upstream: upstream.url, listenFields: 'proxy_protocol: { from: [10.0.0.0/8] }' }),
    );
    try {
      for (const header of [V1('10.9.9.9'), v2(1, [10, 9, 9, 9])]) {
        const r = await raw(gw.apiPort, [header, fencedGet()]);
        expect(r.closed).toBe(true);
        expect(r.text).toBe('');
      }
      // a plain request whose method begins like the v1 signature is not taken for one
      const post = await raw(gw.apiPort, [fencedGet(KEYS.server.key).replace('GET', 'PROPFIND')]);
      expect(status(post.text)).toBeGreaterThan(0);
      const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
      expect(metrics).toContain('leadgate_proxy_protocol_total{listener="api",result="refused"} 2');
    } finally {
      await gw.close();
    }
  });

  it('begins TLS after the header, and the header is believed for what the TLS connection carries', async () => {
    const pair = pki.server('pp-tls');
    const gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        listenFields: `proxy_protocol: { from: [127.0.0.1] }, tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
      }),
    );
    try {
      const ca = readFileSync(pki.caCert, 'utf8');
      for (const together of [true, false]) {
        const socket = net.connect(gw.apiPort, '127.0.0.1');
        await new Promise((r) => socket.once('connect', r));
        if (together) socket.cork();
        socket.write(v2(1, [10, 9, 9, 9]));
        if (!together) await new Promise((r) => setTimeout(r, 50));
        const secure = tls.connect({ socket, ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
        if (together) process.nextTick(() => socket.uncork());
        await new Promise((r) => secure.once('secureConnect', r));
        secure.write(fencedGet());
        let text = '';
        secure.on('data', (c: Buffer) => (text += c.toString('latin1')));
        await new Promise((r) => secure.once('close', r));
        expect(status(text), `header and ClientHello together: ${together}`).toBe(200);
        expect(upstream.received.at(-1)?.headers['x-forwarded-for']).toBe('10.9.9.9');
        expect(upstream.received.at(-1)?.headers['x-forwarded-proto']).toBe('https');
      }
    } finally {
      await gw.close();
    }
  });
});

const HAPROXY = '/usr/sbin/haproxy';
const hasHaproxy = requires('haproxy', runs(HAPROXY, ['-v']), 'apt-get install haproxy');
const STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';
const hasStream = requires(
  "nginx's stream module",
  runs('test', ['-e', STREAM_MODULE]) && runs('/usr/sbin/nginx', ['-v']),
  'apt-get install nginx-light libnginx-mod-stream',
);
const shipped = (name: string) => new URL(`../../deploy/proxy-protocol/${name}`, import.meta.url).pathname;

/** Starts a balancer, waits for its port, runs `body`, stops it. */
async function behind(
  start: (port: number, dir: string) => ChildProcess,
  body: (port: number) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-l4-'));
  const port = await freePort();
  const child = start(port, dir);
  try {
    await waitForListener(port);
    await body(port);
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
  }
}

describe.runIf(hasHaproxy || hasStream)(
  'behind real L4 balancers: origin_ips decided by the real client',
  () => {
    const check = async (port: number) => {
      const edge = { 'x-apikey': EDGE_KEY, 'x-source': 'web' };
      const allowed = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: edge,
        localAddress: '127.0.0.5',
      });
      expect(allowed.status).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-forwarded-for']).toBe('127.0.0.5');
      const other = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: edge,
        localAddress: '127.0.0.6',
      });
      expect(other.status).toBe(403);
      expect(other.json()).toMatchObject({ code: 'origin_not_allowed' });
    };
    const gateway = () =>
      startTestGateway(
        writeConfig({ upstream: upstream.url, keys, listenFields: 'proxy_protocol: { from: [127.0.0.1] }' }),
      );

    it.runIf(hasHaproxy)(
      'HAProxy in TCP mode with send-proxy-v2 (deploy/proxy-protocol/haproxy.cfg as shipped)',
      async () => {
        const gw = await gateway();
        try {
          await behind(
            (port) =>
              spawn(HAPROXY, ['-db', '-f', shipped('haproxy.cfg')], {
                stdio: 'ignore',
                env: { ...process.env, LISTEN: `127.0.0.1:${port}`, LEADGATE: `127.0.0.1:${gw.apiPort}` },
              }),
            check,
          );
          const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
          expect(metrics).toMatch(/leadgate_proxy_protocol_total\{listener="api",result="ok"\} [1-9]/);
        } finally {
          await gw.close();
        }
      },
    );

    it.runIf(hasStream)(
      'nginx stream with proxy_protocol on (deploy/proxy-protocol/nginx-stream.conf as shipped)',
      async () => {
        const gw = await gateway();
        try {
          await behind((port, dir) => {
            writeFileSync(
              join(dir, 'nginx.conf'),
              `load_module ${STREAM_MODULE};
worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 64; }
stream {
  upstream leadgate_api { server 127.0.0.1:${gw.apiPort}; }
  server { listen 127.0.0.1:${port}; include ${shipped('nginx-stream.conf')}; }
}
`,
            );
            return spawn('/usr/sbin/nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
          }, check);
        } finally {
          await gw.close();
        }
      },
    );
  },
);
