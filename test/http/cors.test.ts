import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
const SHOP = 'https://shop.example.com';
const OTHER_SHOP = 'https://other-shop.example.com';
const EVIL = 'https://evil.example.net';

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  upstream.behave((_req, res) => {
    res.writeHead(200, { 'access-control-allow-origin': '*', vary: 'Accept-Encoding' });
    res.end('ok');
  });
  const keys = `${keysYaml()}  - { name: narrow, key: "sk_narrow_000000000000000000005", access_type: READ, purpose: SERVER, signing_secret: "narrow-secret-00000000000000005", cors_origins: ["${OTHER_SHOP}"] }\n`;
  gw = await startTestGateway(
    writeConfig({ upstream: upstream.url, keys, extra: `cors: { origins: ["${SHOP}"], max_age_s: 120 }` }),
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const preflight = (origin: string, path = '/api/v2/merchant/orders') =>
  ask(gw.apiPort, {
    method: 'OPTIONS',
    path,
    headers: {
      origin,
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'x-apikey,x-source,x-leadtoken',
    },
  });

describe('CORS', () => {
  it('answers a preflight from an allowed origin itself, without credentials', async () => {
    const before = upstream.received.length;
    const res = await preflight(SHOP);
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(SHOP);
    expect(res.headers['access-control-allow-headers']).toBe(
      'x-apikey, x-source, x-leadtoken, x-timestamp, x-leaddigest, content-type',
    );
    expect(res.headers['access-control-allow-methods']).toContain('GET');
    expect(res.headers['access-control-max-age']).toBe('120');
    expect(res.headers.vary).toContain('Origin');
    expect(upstream.received.length).toBe(before);
  });

  it('grants a preflight for an origin only a key names', async () => {
    expect((await preflight(OTHER_SHOP)).headers['access-control-allow-origin']).toBe(OTHER_SHOP);
  });

  it('gives no grant to a preflight from any other origin', async () => {
    const res = await preflight(EVIL);
    expect(res.status).toBe(403);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.json().code).toBe('cors_origin_not_allowed');
  });

  it('grants actual responses to allowed origins only, never *, with Vary: Origin', async () => {
    const headers = {
      'x-apikey': KEYS.storefront.key,
      'x-source': 'web',
      'x-leadtoken': signLeadToken(KEYS.storefront.secret, 'lead-1'),
    };
    const ok = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { ...headers, origin: SHOP },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(SHOP);
    expect(ok.headers['access-control-expose-headers']).toContain('x-request-id');
    expect(ok.headers.vary).toMatch(/Origin/);
    const evil = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { ...headers, origin: EVIL },
    });
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
    expect(evil.headers.vary).toMatch(/Origin/);
  });

  it('puts the grant on refusals too, so the page can read the error', async () => {
    const res = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': KEYS.storefront.key, 'x-source': 'web', origin: SHOP },
    });
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe(SHOP);
    const noKey = await ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: { origin: SHOP } });
    expect(noKey.headers['access-control-allow-origin']).toBe(SHOP);
  });

  it('refuses a key with cors_origins used from another origin', async () => {
    const narrow = { 'x-apikey': 'sk_narrow_000000000000000000005', 'x-source': 'web' };
    const ok = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { ...narrow, origin: OTHER_SHOP },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(OTHER_SHOP);
    const refused = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { ...narrow, origin: SHOP },
    });
    expect(refused.status).toBe(403);
    expect(refused.json().code).toBe('cors_origin_not_allowed');
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    // server-side callers send no Origin and are not affected
    expect((await ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: narrow })).status).toBe(200);
  });
});
