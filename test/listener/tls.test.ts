import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { makePki, sClient, secretVolume, servedSerial, type TestPki } from '../helpers/certs.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { runCli } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const GET = (path: string, headers = '') =>
  `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}Connection: close\r\n\r\n`;

/** A GET over TLS with Node's https client; `cert`/`key` for mutual TLS. */
function tlsAsk(
  port: number,
  ca: string,
  headers: Record<string, string>,
  client: { cert?: Buffer; key?: Buffer } = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/api/v2/merchant/orders', ca, headers, agent: false, ...client },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const KEY_HEADERS = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };

let pki: TestPki;
let upstream: RecordingUpstream;

beforeAll(async () => {
  pki = makePki();
  upstream = await startRecordingUpstream();
});
afterAll(async () => {
  await upstream.close();
});

describe('TLS on the API listener (CONTRACT §11)', () => {
  it('speaks TLS 1.2 and 1.3, not 1.1; offers h2 then http/1.1 by ALPN; forwards with X-Forwarded-Proto: https', async () => {
    const pair = pki.server('tls-basic');
    const file = writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
    });
    const gw = await startTestGateway(file);
    try {
      const port = gw.apiPort;
      expect((await sClient(port, ['-tls1_1', '-CAfile', pki.caCert])).ok).toBe(false);
      const v12 = await sClient(port, ['-tls1_2', '-CAfile', pki.caCert, '-alpn', 'h2,http/1.1']);
      expect(v12.out).toContain('Protocol  : TLSv1.2');
      expect(v12.out).toContain('ALPN protocol: h2');
      expect(v12.out).toContain('Verify return code: 0 (ok)');
      const v13 = await sClient(
        port,
        ['-tls1_3', '-CAfile', pki.caCert, '-alpn', 'http/1.1'],
        GET('/api/v2/merchant/orders'),
      );
      expect(v13.out).toContain('ALPN protocol: http/1.1');
      expect(v13.out).toMatch(/HTTP\/1\.1 401 /);
      expect(v13.out).toContain('application/problem+json');
      // SNI is not required: a handshake without a server name still succeeds
      expect((await sClient(port, ['-noservername', '-CAfile', pki.caCert])).out).toContain(
        'Verify return code: 0 (ok)',
      );
      const before = upstream.received.length;
      const res = await tlsAsk(port, readFileSync(pki.caCert, 'utf8'), {
        ...KEY_HEADERS,
        'x-forwarded-proto': 'http',
      });
      expect(res.status).toBe(200);
      expect(upstream.received.length).toBe(before + 1);
      expect(upstream.received.at(-1)?.headers['x-forwarded-proto']).toBe('https');
      const metrics = await ask(gw.adminPort, { path: '/metrics' });
      expect(metrics.text).toContain('leadgate_tls_certificate_expiry_timestamp_seconds{listener="api"}');
      expect(metrics.text).toContain('leadgate_tls_reloads_total{listener="api",result="failed"} 0');
      expect(metrics.text).toMatch(
        /leadgate_connections_total\{listener="api",protocol="http1",tls="true"\} [1-9]/,
      );
      expect(metrics.text).toMatch(
        /leadgate_connections_total\{listener="api",protocol="h2",tls="true"\} [1-9]/,
      );
    } finally {
      await gw.close();
    }
  });

  it('offers http/1.1 only with http2: false, and min_version: TLSv1.3 refuses 1.2', async () => {
    const pair = pki.server('tls-h1');
    const file = writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key}, http2: false, min_version: TLSv1.3 }`,
    });
    const gw = await startTestGateway(file);
    try {
      const out = (await sClient(gw.apiPort, ['-CAfile', pki.caCert, '-alpn', 'h2,http/1.1'])).out;
      expect(out).toContain('ALPN protocol: http/1.1');
      expect((await sClient(gw.apiPort, ['-tls1_2', '-CAfile', pki.caCert])).ok).toBe(false);
    } finally {
      await gw.close();
    }
  });

  it('with client_ca_file, refuses a client without a certificate or with one from another CA, in the handshake', async () => {
    const pair = pki.server('tls-mtls');
    const good = pki.client('good-client');
    const foreign = pki.client('foreign-client', true);
    const file = writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key}, client_ca_file: ${pki.caCert} }`,
    });
    const gw = await startTestGateway(file);
    try {
      const before = upstream.received.length;
      const request = GET('/api/v2/merchant/orders', `x-apikey: ${KEYS.server.key}\r\nx-source: web\r\n`);
      for (const v of ['-tls1_2', '-tls1_3']) {
        const none = await sClient(gw.apiPort, [v, '-CAfile', pki.caCert], request);
        expect(none.out).not.toMatch(/HTTP\/1\.1 \d{3}/);
        const wrong = await sClient(
          gw.apiPort,
          [v, '-CAfile', pki.caCert, '-cert', foreign.cert, '-key', foreign.key],
          request,
        );
        expect(wrong.out).not.toMatch(/HTTP\/1\.1 \d{3}/);
        const right = await sClient(
          gw.apiPort,
          [v, '-CAfile', pki.caCert, '-cert', good.cert, '-key', good.key],
          request,
        );
        expect(right.out).toMatch(/HTTP\/1\.1 200 /);
      }
      expect(upstream.received.length).toBe(before + 2);
    } finally {
      await gw.close();
    }
  });
});

describe('certificate files at start and at reload', () => {
  it('refuses to start on a missing, mismatched or expired pair: one problem naming the file, no key bytes', () => {
    const pair = pki.server('tls-start');
    const other = pki.server('tls-other');
    const expired = pki.server('tls-expired', -1);
    const cases = [
      {
        tls: `{ cert_file: ${pair.cert}, key_file: /nonexistent/tls.key }`,
        field: 'listen.tls.key_file',
        file: '/nonexistent/tls.key',
      },
      {
        tls: `{ cert_file: ${pair.cert}, key_file: ${other.key} }`,
        field: 'listen.tls.key_file',
        file: other.key,
      },
      {
        tls: `{ cert_file: ${expired.cert}, key_file: ${expired.key} }`,
        field: 'listen.tls.cert_file',
        file: expired.cert,
      },
      {
        tls: `{ cert_file: ${pair.key}, key_file: ${pair.key} }`,
        field: 'listen.tls.cert_file',
        file: pair.key,
      },
    ];
    for (const c of cases) {
      const file = writeConfig({ upstream: upstream.url, listenFields: `tls: ${c.tls}` });
      let error: unknown;
      try {
        loadConfig(file);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems;
      expect(problems).toHaveLength(1);
      expect(problems[0]?.field).toBe(c.field);
      expect(problems[0]?.line).toBeTypeOf('number');
      expect(problems[0]?.message).toContain(c.file);
      expect((error as Error).message).not.toContain('PRIVATE KEY');
      expect((error as Error).message.split('\n')).toHaveLength(1);
    }
  });

  it('warns (leadgate check) on a certificate that expires within 14 days', () => {
    const soon = pki.server('tls-soon', 10);
    const later = pki.server('tls-later', 30);
    const at = (p: { cert: string; key: string }) =>
      loadConfig(
        writeConfig({
          upstream: upstream.url,
          listenFields: `tls: { cert_file: ${p.cert}, key_file: ${p.key} }`,
        }),
      ).warnings.filter((w) => w.field === 'listen.tls.cert_file');
    expect(at(soon)).toHaveLength(1);
    // `leadgate check` (the built binary) says it with the file and line; a missing key fails it
    const soonFile = writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${soon.cert}, key_file: ${soon.key} }`,
    });
    const check = runCli(['check', '--config', soonFile]);
    expect(check.code).toBe(0);
    expect(check.stderr).toMatch(
      /warning: .*gateway\.yaml:1: listen\.tls\.cert_file: .*tls-soon\.crt: the certificate expires in/,
    );
    const broken = writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${soon.cert}, key_file: /nonexistent.key }`,
    });
    const refused = runCli(['check', '--config', broken]);
    expect(refused.code).not.toBe(0);
    expect(`${refused.stdout}${refused.stderr}`).toMatch(
      /gateway\.yaml:1: listen\.tls\.key_file: \/nonexistent\.key: cannot read: ENOENT/,
    );
    expect(at(soon)[0]?.message).toMatch(/tls-soon\.crt: the certificate expires in (9|10) day\(s\)/);
    expect(at(later)).toHaveLength(0);
  });

  it('rotates on a ..data swap under steady load: 0 failed requests; a bad pair is refused and the old one serves', async () => {
    const first = pki.server('rot-1');
    const second = pki.server('rot-2');
    const other = pki.server('rot-other');
    const pem = (p: string) => readFileSync(p, 'utf8');
    const volume = secretVolume({ 'tls.crt': pem(first.cert), 'tls.key': pem(first.key) });
    const file = writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${join(volume.dir, 'tls.crt')}, key_file: ${join(volume.dir, 'tls.key')} }`,
    });
    const gw = await startTestGateway(file);
    const ca = pem(pki.caCert);
    const serial = (p: string) =>
      spawnSync('openssl', ['x509', '-in', p, '-noout', '-serial'], { encoding: 'utf8' })
        .stdout.trim()
        .split('=')[1];
    try {
      expect(await servedSerial(gw.apiPort, ca)).toBe(serial(first.cert));
      // a kept-alive connection opened before the swap
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
      const kept = () =>
        new Promise<number>((resolve, reject) => {
          https
            .get(
              {
                host: '127.0.0.1',
                port: gw.apiPort,
                path: '/api/v2/merchant/orders',
                headers: KEY_HEADERS,
                agent,
              },
              (res) => {
                res.resume();
                res.on('end', () => resolve(res.statusCode ?? 0));
              },
            )
            .on('error', reject);
        });
      expect(await kept()).toBe(200);
      let stop = false;
      let ok = 0;
      let failed = 0;
      // four clients, each a new TLS connection per request, for the whole rotation
      const load = Promise.all(
        Array.from({ length: 4 }, async () => {
          while (!stop) {
            await tlsAsk(gw.apiPort, ca, KEY_HEADERS).then(
              (r) => (r.status === 200 ? ok++ : failed++),
              () => failed++,
            );
          }
        }),
      );
      volume.swap({ 'tls.crt': pem(second.cert), 'tls.key': pem(second.key) });
      const deadline = Date.now() + 10_000;
      while ((await servedSerial(gw.apiPort, ca)) !== serial(second.cert) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await servedSerial(gw.apiPort, ca)).toBe(serial(second.cert));
      // a mismatched pair: refused, the second keeps serving
      volume.swap({ 'tls.crt': pem(other.cert), 'tls.key': pem(second.key) });
      const refusedBy = Date.now() + 10_000;
      while (!gw.logs.text.includes('certificate reload refused') && Date.now() < refusedBy) {
        await new Promise((r) => setTimeout(r, 100));
      }
      stop = true;
      await load;
      process.stdout.write(`certificate rotation under load: ${ok} requests served, ${failed} failed\n`);
      expect(failed).toBe(0);
      expect(ok).toBeGreaterThan(0);
      expect(await servedSerial(gw.apiPort, ca)).toBe(serial(second.cert));
      expect(await kept()).toBe(200);
      agent.destroy();
      const line = gw.logs.lines.find((l) => l.includes('certificate reload refused')) ?? '';
      expect(JSON.parse(line)).toMatchObject({ listener: 'api', file: join(volume.dir, 'tls.key') });
      expect(gw.logs.text).not.toContain('PRIVATE KEY');
      const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
      expect(metrics).toMatch(/leadgate_tls_reloads_total\{listener="api",result="ok"\} 1\b/);
      expect(metrics).toMatch(/leadgate_tls_reloads_total\{listener="api",result="failed"\} [1-9]/);
    } finally {
      await gw.close();
    }
  });

  it('serves TLS on the admin and forward-auth listeners too', async () => {
    const pair = pki.server('tls-all');
    const tls = `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`;
    const file = writeConfig({ upstream: upstream.url });
    const text = readFileSync(file, 'utf8')
      .replace('admin: { host: 127.0.0.1, port: 0 }', `admin: { host: 127.0.0.1, port: 0, ${tls} }`)
      .replace('shutdown:', `forward_auth: { listen: { host: 127.0.0.1, port: 0, ${tls} } }\nshutdown:`);
    writeFileSync(file, text);
    const gw = await startTestGateway(file);
    try {
      expect((await sClient(gw.adminPort, ['-CAfile', pki.caCert], GET('/healthz'))).out).toMatch(
        /HTTP\/1\.1 200 /,
      );
      expect((await sClient(gw.forwardAuthPort ?? 0, ['-CAfile', pki.caCert])).out).toContain(
        'Verify return code: 0 (ok)',
      );
    } finally {
      await gw.close();
    }
  });
});
