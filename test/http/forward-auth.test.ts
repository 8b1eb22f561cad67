import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { carriedRefusal } from '../../src/http/problem.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
const token = () => signLeadToken(KEYS.storefront.secret, 'lead-1');
const storefront = () => ({ 'x-apikey': KEYS.storefront.key, 'x-source': 'web', 'x-leadtoken': token() });

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(
    writeConfig({ upstream: upstream.url, extra: 'forward_auth: { listen: { host: 127.0.0.1, port: 0 } }' }),
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const authPort = () => gw.forwardAuthPort ?? 0;

describe('forward-auth listener', () => {
  it('answers 200 with the identity headers, each once, and an empty body', async () => {
    const r = await ask(authPort(), {
      path: '/_auth',
      headers: {
        ...storefront(),
        'x-original-method': 'GET',
        'x-original-uri': '/api/v2/merchant/orders?page=2',
      },
    });
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect(r.headers['x-lead-id']).toBe('lead-1');
    expect(r.headers['x-api-key-name']).toBe('storefront');
    expect(r.headers['x-api-key-access']).toBe('READ');
    expect(r.headers['x-api-key-purpose']).toBe('STOREFRONT');
    expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(upstream.received.length).toBe(0); // nothing is forwarded from this listener
  });

  it('refuses as the API listener would, judging the original request (Traefik pair, Envoy style too)', async () => {
    const none = await ask(authPort(), {
      path: '/x',
      headers: {
        'x-source': 'web',
        'x-forwarded-method': 'GET',
        'x-forwarded-uri': '/api/v2/merchant/orders',
      },
    });
    expect(none.status).toBe(401);
    expect(none.headers['content-type']).toBe('application/problem+json');
    expect(none.json().code).toBe('missing_api_key');
    const write = await ask(authPort(), {
      path: '/x',
      headers: {
        'x-apikey': KEYS.server.key,
        'x-source': 'web',
        'x-forwarded-method': 'DELETE',
        'x-forwarded-uri': '/api/v2/merchant/orders/1',
      },
    });
    expect(write.json().code).toBe('method_not_allowed');
    const envoy = await ask(authPort(), { path: '/api/v2/merchant/orders', headers: storefront() });
    expect(envoy.status).toBe(200);
    const dots = await ask(authPort(), {
      path: '/x',
      headers: { ...storefront(), 'x-original-uri': '/api/v2/merchant/../merchant/orders' },
    });
    expect(dots.json().code).toBe('bad_path');
  });

  it('answers 400 when the two proxies pairs name different requests, and never serves the lookup', async () => {
    const both = await ask(authPort(), {
      path: '/x',
      headers: {
        ...storefront(),
        'x-original-method': 'GET',
        'x-original-uri': '/api/v2/merchant/orders',
        'x-forwarded-method': 'GET',
        'x-forwarded-uri': '/api/v2/merchant/admin',
      },
    });
    expect(both.status).toBe(400);
    expect(both.json().code).toBe('bad_request');
    const lookup = await ask(authPort(), {
      path: '/x',
      headers: { ...storefront(), 'x-original-uri': '/api/v2/merchant/leads/lead-1' },
    });
    expect(lookup.status).toBe(404);
    expect(lookup.json().detail).toMatch(/API listener/);
  });
});

// The shipped nginx and Caddy files, run in the real proxies: test/deploy/nginx.test.ts, caddy.test.ts.

describe('a refusal carried in headers (X-Leadgate-Refusal: headers, as the nginx file asks)', () => {
  it('answers 403 with the real status and the same problem in headers; an admitted call is untouched', async () => {
    const call = { 'x-original-method': 'GET', 'x-original-uri': '/api/v2/merchant/orders' };
    const plain = await ask(authPort(), {
      path: '/',
      headers: { ...call, ...storefront(), 'x-source': 'tv' },
    });
    const carried = await ask(authPort(), {
      path: '/',
      headers: { ...call, ...storefront(), 'x-source': 'tv', 'x-leadgate-refusal': 'headers' },
    });
    expect(plain.status).toBe(400);
    expect(carried.status).toBe(403);
    expect(carried.text).toBe('');
    expect(carried.headers['x-leadgate-status']).toBe('400');
    const body = JSON.parse(String(carried.headers['x-leadgate-problem']));
    expect({ ...body, request_id: '' }).toEqual({ ...plain.json(), request_id: '' });
    expect(body.request_id).toBe(carried.headers['x-request-id']);
    const admitted = await ask(authPort(), {
      path: '/',
      headers: { ...call, ...storefront(), 'x-leadgate-refusal': 'headers' },
    });
    expect(admitted.status).toBe(200);
    expect(admitted.headers['x-leadgate-status']).toBeUndefined();
  });
});

describe('carriedRefusal', () => {
  it('keeps the body JSON-equal while escaping every character a header may not hold', () => {
    const body = JSON.stringify({ detail: 'über — 😀\u0001' });
    const carried = carriedRefusal(429, body)['x-leadgate-problem'] ?? '';
    expect(carried).toMatch(/^[\x20-\x7e]+$/);
    expect(JSON.parse(carried)).toEqual(JSON.parse(body));
  });
});
