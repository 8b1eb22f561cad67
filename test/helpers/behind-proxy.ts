import { afterAll, beforeAll, expect, it } from 'vitest';
import { leadDigest, signLeadToken } from '../../src/client/index.js';
import { type Answer, ask } from './client.js';
import { KEYS, keysYaml, writeConfig } from './fixture.js';
import { startTestGateway } from './gateway.js';
import { freePort } from './optional.js';
import type { RunningProxy, Targets } from './proxies.js';
import { type RecordingUpstream, startRecordingUpstream } from './upstream.js';

/**
 * CONTRACT §9 behind a shipped proxy file, the same for every proxy: the client address is the
 * one the proxy accepted, every refusal reaches the client as leadgate wrote it and is charged
 * once, admitted requests carry leadgate's request id to the backend. Clients connect from
 * distinct loopback addresses (127.0.0.x); the proxy reaches leadgate from 127.0.0.1, the only
 * trusted proxy.
 */
export const PINNED = { key: 'sk_pinned_test_0000000000000005', secret: 'pinned-secret-000000000000000005' };
export const PINNED_SHOP = {
  key: 'sk_pinshop_test_000000000000007',
  secret: 'pinshop-secret-00000000000000007',
};
export const LIMITED = { key: 'sk_limited_test_000000000000006', secret: 'limited-secret-00000000000000006' };

const keys = `${keysYaml()}  - { name: pinned, key: "${PINNED.key}", access_type: READ, purpose: SERVER, signing_secret: "${PINNED.secret}", origin_ips: [127.0.0.2/32] }
  - { name: pinned-shop, key: "${PINNED_SHOP.key}", access_type: READ, purpose: STOREFRONT, signing_secret: "${PINNED_SHOP.secret}", origin_ips: [127.0.0.2/32] }
  - { name: limited, key: "${LIMITED.key}", access_type: READ, purpose: SERVER, signing_secret: "${LIMITED.secret}" }
`;

const LIMITS = `client_ip: { trusted_proxies: [127.0.0.1/32] }
forward_auth: { listen: { host: 127.0.0.1, port: 0 } }
log: { requests: all }
rate_limits:
  policies:
    - { name: one-a-minute, by: client_ip, limit: 1, window_s: 60, keys: [limited] }
    - { name: roomy, by: key, limit: 100, window_s: 60, keys: [storefront] }
`;

export const storefront = () => ({
  'x-apikey': KEYS.storefront.key,
  'x-source': 'web',
  'x-leadtoken': signLeadToken(KEYS.storefront.secret, 'lead-1'),
});
export const server = () => ({ 'x-apikey': KEYS.server.key, 'x-source': 'web' });

type Gw = Awaited<ReturnType<typeof startTestGateway>>;

export interface ProxySetup {
  upstream: RecordingUpstream;
  gw: Gw;
  proxy: RunningProxy;
  /** A gateway whose state store is down and whose rate limits fail closed (503), and its proxy. */
  downProxy: RunningProxy;
  get(path: string, headers: Record<string, string>, from?: string, method?: string): Promise<Answer>;
  metric(line: string): Promise<number>;
}

/** Starts a backend, the two gateways and a proxy in front of each; stops them after the file. */
export function setUpBehind(start: (t: Targets) => Promise<RunningProxy>): ProxySetup {
  const s = {} as ProxySetup;
  let down: Gw;
  beforeAll(async () => {
    s.upstream = await startRecordingUpstream();
    const app = new URL(s.upstream.url).host;
    s.gw = await startTestGateway(writeConfig({ upstream: s.upstream.url, extra: LIMITS, keys }));
    s.proxy = await start({ auth: s.gw.forwardAuthPort ?? 0, api: s.gw.apiPort, app });
    const dead = await freePort();
    down = await startTestGateway(
      writeConfig({
        upstream: s.upstream.url,
        extra: `forward_auth: { listen: { host: 127.0.0.1, port: 0 } }
state: { redis: { url: "redis://127.0.0.1:${dead}", timeout_ms: 50 } }
rate_limits: { on_store_error: deny, policies: [{ name: any, by: key, limit: 100, window_s: 60 }] }`,
      }),
    );
    s.downProxy = await start({ auth: down.forwardAuthPort ?? 0, api: down.apiPort, app });
    s.get = (path, headers, from = '127.0.0.9', method = 'GET') =>
      ask(s.proxy.port, { path, headers, method, localAddress: from });
    s.metric = async (line) => {
      const text = (await ask(s.gw.adminPort, { path: '/metrics' })).text;
      const found = text.split('\n').find((l) => l.startsWith(`${line} `));
      return found === undefined ? 0 : Number(found.slice(line.length + 1));
    };
  });
  afterAll(async () => {
    s.proxy?.stop();
    s.downProxy?.stop();
    await s.gw?.close();
    await down?.close();
    await s.upstream?.close();
  });
  return s;
}

/** The request id of leadgate's log line for the request the backend received last. */
export function loggedIds(gw: Gw): string[] {
  return gw.logs.lines.map((l) => (JSON.parse(l) as { request_id?: string }).request_id ?? '');
}

/** What a client of leadgate's own listener would see in a refusal: status, body, headers. */
export function expectProblem(r: Answer, status: number, code: string): void {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toBe('application/problem+json');
  const body = r.json<{ status: number; code: string; request_id: string }>();
  expect(body.code).toBe(code);
  expect(body.status).toBe(status);
  expect(r.headers['x-request-id']).toBe(body.request_id);
}

/** The §9 tests every shipped proxy file passes. */
export function behindProxyRules(s: ProxySetup): void {
  const orders = '/api/v2/merchant/orders';

  it("never passes a client's own address or scheme headers to the backend, in any spelling", async () => {
    const claims = {
      forwarded: 'for=10.0.0.1;proto=https',
      'x-real-ip': '10.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-port': '1',
    };
    const r = await s.get(orders, { ...server(), ...claims }, '127.0.0.4');
    expect(r.status).toBe(200);
    const got = s.upstream.received.at(-1)?.headers ?? {};
    expect(got.forwarded).toBeUndefined();
    expect(got['x-real-ip'] ?? '127.0.0.4').toBe('127.0.0.4');
    expect(got['x-forwarded-proto'] ?? 'http').toBe('http');
    expect(got['x-forwarded-host']).not.toBe('evil.example');
    expect(got['x-forwarded-port']).not.toBe('1');
    // an alias a CGI backend reads as X-Forwarded-For reaches leadgate's auth call: refused
    const before = s.upstream.received.length;
    expectProblem(await s.get(orders, { ...server(), XForwardedFor: '10.0.0.4' }), 400, 'bad_request');
    expect(s.upstream.received.length).toBe(before);
  });

  it("decides origin_ips on the address the proxy accepted, never on a client's forwarding headers", async () => {
    const before = s.upstream.received.length;
    const spoofs: Record<string, string>[] = [
      { 'x-forwarded-for': '127.0.0.2' },
      { forwarded: 'for=127.0.0.2' },
      { 'x-real-ip': '127.0.0.2' },
    ];
    for (const spoof of spoofs) {
      const r = await s.get(orders, { 'x-apikey': PINNED.key, 'x-source': 'web', ...spoof }, '127.0.0.3');
      expectProblem(r, 403, 'origin_not_allowed');
    }
    expect(s.upstream.received.length).toBe(before);
    const real = await s.get(orders, { 'x-apikey': PINNED.key, 'x-source': 'web' }, '127.0.0.2');
    expect(real.status).toBe(200);
    expect(s.upstream.received.at(-1)?.headers['x-api-key-name']).toBe('pinned');
    // The lookup goes to the API listener through the same proxy, by the same rule.
    const lookup = () => {
      const ts = Math.floor(Date.now() / 1000);
      return {
        'x-apikey': PINNED_SHOP.key,
        'x-source': 'web',
        'x-timestamp': String(ts),
        'x-leaddigest': leadDigest(PINNED_SHOP.secret, 'cust-1', ts),
      };
    };
    const path = '/api/v2/merchant/leads/x?customer_id=cust-1';
    const spoofed = await s.get(path, { ...lookup(), 'x-forwarded-for': '127.0.0.2' }, '127.0.0.3');
    expectProblem(spoofed, 403, 'origin_not_allowed');
    const allowed = await s.get(path, lookup(), '127.0.0.2');
    expect(allowed.status).toBe(200);
    expect(typeof allowed.json().lead_token).toBe('string');
  });

  it('counts `by: client_ip` on the real address: a spoofed X-Forwarded-For gets no fresh bucket', async () => {
    const key = { 'x-apikey': LIMITED.key, 'x-source': 'web' };
    const first = await s.get(orders, key, '127.0.0.4');
    expect(first.status).toBe(200);
    const spoofed = await s.get(orders, { ...key, 'x-forwarded-for': '127.0.0.5' }, '127.0.0.4');
    expectProblem(spoofed, 429, 'rate_limited');
    const other = await s.get(orders, key, '127.0.0.5');
    expect(other.status).toBe(200);
  });

  it('delivers a 429 as leadgate wrote it, with Retry-After and the RateLimit fields, charged once', async () => {
    const key = { 'x-apikey': LIMITED.key, 'x-source': 'web' };
    const counted = 'leadgate_rate_limited_total{policy="one-a-minute",key="limited"}';
    await s.get(orders, key, '127.0.0.6');
    const before = await s.metric(counted);
    const answers: Answer[] = [];
    for (let i = 0; i < 3; i++) answers.push(await s.get(orders, key, '127.0.0.6'));
    for (const r of answers) {
      expectProblem(r, 429, 'rate_limited');
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      expect(r.headers.ratelimit).toMatch(/^"one-a-minute";r=0;t=\d+$/);
      expect(r.headers['ratelimit-policy']).toBe('"one-a-minute";q=1;w=60');
    }
    expect(await s.metric(counted)).toBe(before + 3);
  });

  it("delivers 400, 401 and 403 as leadgate's own problem+json", async () => {
    const before = s.upstream.received.length;
    expectProblem(await s.get(orders, { ...storefront(), 'x-source': 'tv' }), 400, 'invalid_source');
    expectProblem(await s.get(orders, { 'x-apikey': KEYS.server.key }), 400, 'missing_source');
    expectProblem(await s.get(orders, { 'x-source': 'web' }), 401, 'missing_api_key');
    expectProblem(await s.get(orders, { ...server(), 'x-apikey': 'sk_nope' }), 401, 'invalid_api_key');
    expectProblem(await s.get(`${orders}/1`, server(), '127.0.0.9', 'DELETE'), 403, 'method_not_allowed');
    expect(s.upstream.received.length).toBe(before);
  });

  it('delivers a 503 store_unavailable with Retry-After when the store is down and limits fail closed', async () => {
    const r = await ask(s.downProxy.port, { path: orders, headers: server() });
    expectProblem(r, 503, 'store_unavailable');
    expect(r.headers['retry-after']).toBe('1');
  });

  it("charges an admitted request once, and the backend gets leadgate's request id", async () => {
    const r1 = await s.get(orders, storefront());
    const id1 = s.upstream.received.at(-1)?.headers['x-request-id'];
    const r2 = await s.get(orders, storefront());
    const id2 = s.upstream.received.at(-1)?.headers['x-request-id'];
    expect([r1.status, r2.status]).toEqual([200, 200]);
    expect(typeof id1).toBe('string');
    expect(id1).not.toBe(id2);
    const ids = loggedIds(s.gw);
    expect(ids).toContain(id1);
    expect(ids).toContain(id2);
  });
}

/** `r` of a RateLimit field for one policy. */
export function remaining(field: string | string[] | undefined): number {
  const m = /;r=(\d+)/.exec(String(field));
  return m === null ? Number.NaN : Number(m[1]);
}
