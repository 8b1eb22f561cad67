import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

describe.each(['undici', 'http-proxy'] as const)('forwarding engine %s', (engine) => {
  let upstream: RecordingUpstream;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway(writeConfig({ upstream: upstream.url, engine }));
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
  const storefront = { 'x-apikey': KEYS.storefront.key, 'x-source': 'mobile' };
  const writer = { 'x-apikey': KEYS.write.key, 'x-source': 'web' };
  const tokenFor = (leadId: string, secret: string = KEYS.storefront.secret) => signLeadToken(secret, leadId);

  async function forwarded(headers: Record<string, string>, path = '/api/v2/merchant/orders?page=2') {
    const before = upstream.received.length;
    const res = await ask(gw.apiPort, { path, headers });
    return { res, got: upstream.received.slice(before) };
  }

  describe('forwarding', () => {
    it("forwards a READ SERVER request with the gateway's identity headers and without credentials", async () => {
      const { res, got } = await forwarded({
        ...server,
        'x-lead-id': 'spoofed',
        'x-api-key-name': 'spoofed',
        'x-api-key-access': 'WRITE',
        'x-request-id': 'spoofed',
        'x-forwarded-for': '203.0.113.66',
        'x-forwarded-proto': 'https',
        'x-custom': 'kept',
      });
      expect(res.status).toBe(200);
      expect(got).toHaveLength(1);
      const h = got[0]?.headers ?? {};
      expect(got[0]?.url).toBe('/api/v2/merchant/orders?page=2');
      expect(h['x-lead-id']).toBeUndefined();
      expect(h['x-api-key-name']).toBe('server');
      expect(h['x-api-key-access']).toBe('READ');
      expect(h['x-api-key-purpose']).toBe('SERVER');
      expect(h['x-apikey']).toBeUndefined();
      expect(h['x-forwarded-for']).toBe('127.0.0.1');
      expect(h['x-forwarded-proto']).toBe('http');
      expect(h['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(h['x-request-id']).toBe(res.headers['x-request-id']);
      expect(h['x-custom']).toBe('kept');
      expect(h['x-source']).toBe('web');
    });

    it("sends x-lead-id only after a verified lead token, never the client's", async () => {
      const { res, got } = await forwarded({
        ...storefront,
        'x-leadtoken': tokenFor('lead-1'),
        'x-lead-id': 'lead-9',
      });
      expect(res.status).toBe(200);
      expect(got[0]?.headers['x-lead-id']).toBe('lead-1');
      expect(got[0]?.headers['x-leadtoken']).toBeUndefined();
      expect(got[0]?.headers['x-api-key-purpose']).toBe('STOREFRONT');
    });

    it('passes W3C trace context (traceparent, tracestate) through to the upstream unchanged', async () => {
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const { got } = await forwarded({ ...server, traceparent, tracestate: 'vendor=abc' });
      expect(got[0]?.headers.traceparent).toBe(traceparent);
      expect(got[0]?.headers.tracestate).toBe('vendor=abc');
    });

    it('verifies a token that a key without the need for one presents', async () => {
      const ok = await forwarded({ ...server, 'x-leadtoken': tokenFor('lead-2', KEYS.server.secret) });
      expect(ok.got[0]?.headers['x-lead-id']).toBe('lead-2');
      const bad = await forwarded({ ...server, 'x-leadtoken': tokenFor('lead-2', KEYS.storefront.secret) });
      expect(bad.res.status).toBe(401);
      expect(bad.res.json().code).toBe('invalid_lead_token');
      expect(bad.got).toHaveLength(0);
    });

    it.each([
      ['no API key', { 'x-source': 'web' }, 401, 'missing_api_key'],
      [
        'an unknown API key',
        { 'x-apikey': 'sk_nope_000000000000000', 'x-source': 'web' },
        401,
        'invalid_api_key',
      ],
      ['no source', { 'x-apikey': KEYS.server.key }, 400, 'missing_source'],
      ['a bad source', { 'x-apikey': KEYS.server.key, 'x-source': 'tv' }, 400, 'invalid_source'],
      [
        'a fenced key from here',
        { 'x-apikey': KEYS.fenced.key, 'x-source': 'web' },
        403,
        'origin_not_allowed',
      ],
      ['a storefront key without a lead credential', storefront, 401, 'missing_lead_credential'],
      ['a garbage token', { ...storefront, 'x-leadtoken': 'garbage' }, 401, 'invalid_lead_token'],
      [
        'a digest off the lookup',
        { ...server, 'x-leaddigest': 'ab'.repeat(32), 'x-timestamp': '1' },
        401,
        'digest_not_accepted',
      ],
    ])('refuses %s, and the upstream sees nothing', async (_name, headers, status, code) => {
      const { res, got } = await forwarded(headers as Record<string, string>);
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toBe('application/problem+json');
      const body = res.json();
      expect(body).toMatchObject({ type: 'about:blank', status, code });
      expect(typeof body.title).toBe('string');
      expect(typeof body.detail).toBe('string');
      expect(body.request_id).toBe(res.headers['x-request-id']);
      expect(got).toHaveLength(0);
    });

    it('answers an expired token with expired_lead_token', async () => {
      const old = signLeadToken(KEYS.storefront.secret, 'lead-1', {
        now: Math.floor(Date.now() / 1000) - 7200,
      });
      const { res } = await forwarded({ ...storefront, 'x-leadtoken': old });
      expect(res.status).toBe(401);
      expect(res.json().code).toBe('expired_lead_token');
    });

    it.each(['POST', 'PUT', 'PATCH', 'DELETE'])('refuses %s with a READ key', async (method) => {
      const res = await ask(gw.apiPort, {
        method,
        path: '/api/v2/merchant/orders',
        headers: server,
        body: '{}',
      });
      expect(res.status).toBe(403);
      expect(res.json().code).toBe('method_not_allowed');
    });

    it.each([
      ['/api/v2/merchant/../merchant/orders', 400, 'bad_path'],
      ['/api/v2/merchant/%2e%2e/orders', 400, 'bad_path'],
      ['/api/v2/merchant/orders%2f1', 400, 'bad_path'],
      ['/api/v2/merchant//orders', 400, 'bad_path'],
      ['/api/v2/merchant\\orders', 400, 'bad_path'],
      ['/API/V2/MERCHANT/orders', 400, 'bad_path'],
      ['/internal/admin', 404, 'not_found'],
    ])('answers %s with %i %s, unauthenticated and unforwarded', async (path, status, code) => {
      const { res, got } = await forwarded(server, path);
      expect(res.status).toBe(status);
      expect(res.json().code).toBe(code);
      expect(got).toHaveLength(0);
    });

    it('streams a 200 kB POST body both ways byte for byte', async () => {
      const body = randomBytes(200 * 1024);
      const before = upstream.received.length;
      const res = await ask(gw.apiPort, {
        method: 'POST',
        path: '/api/v2/merchant/actions',
        headers: { ...writer, 'content-type': 'application/octet-stream' },
        body,
      });
      expect(res.status).toBe(200);
      expect(upstream.received[before]?.body.equals(body)).toBe(true);
      expect(res.body.equals(body)).toBe(true);
    });

    it('streams a chunked request body: the upstream has the first bytes before the client sends the last', async () => {
      const before = upstream.received.length;
      const chunks = [randomBytes(1000), randomBytes(70_000), randomBytes(3)];
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: gw.apiPort,
            method: 'PUT',
            path: '/api/v2/merchant/offers/1',
            headers: writer,
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        const firstBytes = upstream.nextBodyBytes();
        req.write(chunks[0]);
        req.write(chunks[1]);
        // The last chunk goes only once the upstream holds the first ones: streamed, not buffered.
        void firstBytes.then(() => req.end(chunks[2]));
      });
      expect(status).toBe(200);
      // Whole, whatever framing the engine chose (Node 22+ may frame an ended body by length).
      expect(upstream.received[before]?.body.equals(Buffer.concat(chunks))).toBe(true);
    });

    it('keeps secrets out of every log line', async () => {
      await forwarded({ ...storefront, 'x-leadtoken': tokenFor('lead-1') });
      await forwarded({ 'x-apikey': 'sk_wrong_key_value_123456', 'x-source': 'web' });
      const logs = gw.logs.text;
      expect(logs).toContain('"msg":"request"');
      for (const secret of [
        KEYS.storefront.key,
        KEYS.storefront.secret,
        'sk_wrong_key_value_123456',
        'eyJ',
        'page=2',
      ]) {
        expect(logs).not.toContain(secret);
      }
      const line = gw.logs.lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.code === 'invalid_api_key');
      expect(line).toMatchObject({
        level: 'info',
        status: 401,
        method: 'GET',
        path: '/api/v2/merchant/orders',
      });
    });
  });

  describe('upstream failures', () => {
    it('answers 502 when the upstream is down, and keeps serving', async () => {
      const dead = http.createServer();
      await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
      const port = (dead.address() as AddressInfo).port;
      await new Promise<void>((r) => dead.close(() => r()));
      const down = await startTestGateway(writeConfig({ upstream: `http://127.0.0.1:${port}`, engine }));
      try {
        for (let i = 0; i < 3; i++) {
          const res = await ask(down.apiPort, { path: '/api/v2/merchant/orders', headers: server });
          expect(res.status).toBe(502);
          expect(res.json().code).toBe('upstream_unavailable');
        }
        expect(down.logs.text).toMatch(/"level":"error".*"status":502/);
        const health = await ask(down.adminPort, { path: '/healthz' });
        expect(health.status).toBe(200);
      } finally {
        await down.close();
      }
    });

    it('answers 504 when the upstream is slower than timeout_ms', async () => {
      const slow = await startRecordingUpstream();
      slow.behave((_req, res) => {
        setTimeout(() => res.end('late'), 1500).unref();
      });
      const g = await startTestGateway(writeConfig({ upstream: slow.url, timeoutMs: 300, engine }));
      try {
        const res = await ask(g.apiPort, { path: '/api/v2/merchant/orders', headers: server });
        expect(res.status).toBe(504);
        expect(res.json().code).toBe('upstream_timeout');
        slow.behave((_req, res2) => res2.end('quick'));
        const next = await ask(g.apiPort, { path: '/api/v2/merchant/orders', headers: server });
        expect(next.status).toBe(200);
        expect(next.text).toBe('quick');
      } finally {
        await g.close();
        await slow.close();
      }
    });

    it('survives a client that hangs up mid-request and an upstream that dies mid-response', async () => {
      const flaky = await startRecordingUpstream();
      flaky.behave((_req, res) => {
        res.writeHead(200, { 'content-length': '100000' });
        res.write(Buffer.alloc(1000));
        setTimeout(() => res.destroy(), 50).unref();
      });
      const g = await startTestGateway(writeConfig({ upstream: flaky.url, engine }));
      try {
        // client hangs up while sending its body
        await new Promise<void>((resolve) => {
          const req = http.request({
            host: '127.0.0.1',
            port: g.apiPort,
            method: 'POST',
            path: '/api/v2/merchant/actions',
            headers: { ...writer, 'content-length': '100000' },
          });
          req.on('error', () => resolve());
          req.write(Buffer.alloc(10_000));
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 100);
        });
        // upstream dies mid-response: the client sees a cut response, not a hang
        const cut = await new Promise<string>((resolve) => {
          const req = http.get(
            { host: '127.0.0.1', port: g.apiPort, path: '/api/v2/merchant/orders', headers: server },
            (res) => {
              res.on('data', () => {});
              res.on('end', () => resolve('end'));
              res.on('error', () => resolve('error'));
              res.on('aborted', () => resolve('aborted'));
            },
          );
          req.on('error', () => resolve('error'));
        });
        expect(['aborted', 'error']).toContain(cut);
        flaky.behave((_req, res) => res.end('fine'));
        const res = await ask(g.apiPort, { path: '/api/v2/merchant/orders', headers: server });
        expect(res.status).toBe(200);
        expect(res.text).toBe('fine');
      } finally {
        await g.close();
        await flaky.close();
      }
    });
  });
});

describe('log.requests', () => {
  it('logs only refusals and failures with "errors", nothing with "none"', async () => {
    const upstream = await startRecordingUpstream();
    const headers = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
    try {
      for (const [mode, expected] of [
        ['errors', ['invalid_api_key']],
        ['none', []],
        ['all', ['ok', 'invalid_api_key']],
      ] as const) {
        const g = await startTestGateway(
          writeConfig({ upstream: upstream.url, extra: `log: { requests: ${mode} }` }),
        );
        try {
          expect((await ask(g.apiPort, { path: '/api/v2/merchant/orders', headers })).status).toBe(200);
          const bad = { ...headers, 'x-apikey': 'sk_nope_0000000000000000' };
          expect((await ask(g.apiPort, { path: '/api/v2/merchant/orders', headers: bad })).status).toBe(401);
          const codes = g.logs.lines
            .map((l) => JSON.parse(l) as { msg: string; code?: string })
            .filter((l) => l.msg === 'request')
            .map((l) => l.code);
          expect(codes, mode).toEqual(expected);
        } finally {
          await g.close();
        }
      }
    } finally {
      await upstream.close();
    }
  });
});
