import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest, signLeadToken } from '../../src/client/index.js';
import { type Answer, ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

type Gw = Awaited<ReturnType<typeof startTestGateway>>;
const withPolicies = (policies: string, extra = '') =>
  startTestGateway(
    writeConfig({
      upstream: upstream.url,
      extra: `${extra}
forward_auth: { listen: { host: 127.0.0.1, port: 0 } }
rate_limits:
  policies:
${policies}`,
    }),
  );
const server = (extra: Record<string, string> = {}) => ({
  'x-apikey': KEYS.server.key,
  'x-source': 'web',
  ...extra,
});
const storefront = (leadId: string) => ({
  'x-apikey': KEYS.storefront.key,
  'x-source': 'web',
  'x-leadtoken': signLeadToken(KEYS.storefront.secret, leadId),
});
const get = (gw: Gw, headers: Record<string, string>, path = '/api/v2/merchant/orders') =>
  ask(gw.apiPort, { path, headers });
const statuses = (answers: Answer[]) => answers.map((a) => a.status);
async function inTurn(n: number, send: () => Promise<Answer>): Promise<Answer[]> {
  const out: Answer[] = [];
  for (let i = 0; i < n; i++) out.push(await send());
  return out;
}

describe('rate limits (GCRA, in memory)', () => {
  let gw: Gw;
  beforeAll(async () => {
    gw = await withPolicies(
      `    - { name: per-key, by: key, limit: 3, window_s: 60, burst: 1, keys: [server] }
    - { name: per-lead, by: lead, limit: 2, window_s: 60, keys: [storefront] }`,
    );
  });
  afterAll(() => gw.close());

  it('admits limit + burst from idle with the RateLimit fields, then answers 429 problem+json naming the policy', async () => {
    const before = upstream.received.length;
    const answers = await inTurn(6, () => get(gw, server()));
    expect(statuses(answers)).toEqual([200, 200, 200, 200, 429, 429]);
    expect(answers[0]?.headers['ratelimit-policy']).toBe('"per-key";q=3;w=60');
    expect(answers.slice(0, 4).map((a) => a.headers.ratelimit)).toEqual([
      '"per-key";r=3;t=20',
      '"per-key";r=2;t=40',
      '"per-key";r=1;t=60',
      '"per-key";r=0;t=20',
    ]);
    const refused = answers[4] as Answer;
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(refused.json()).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(refused.json().detail).toContain('per-key');
    expect(refused.headers['retry-after']).toBe('20');
    expect(refused.headers.ratelimit).toBe('"per-key";r=0;t=20');
    expect(refused.headers['ratelimit-policy']).toBe('"per-key";q=3;w=60');
    expect(upstream.received.length - before).toBe(4);
    const metrics = await ask(gw.adminPort, { path: '/metrics' });
    expect(metrics.text).toContain('leadgate_rate_limited_total{policy="per-key",key="server"} 2');
  });

  it('counts per lead, not for refused requests, and applies only to the keys it names', async () => {
    const bad = { ...storefront('lead-1'), 'x-leadtoken': 'not-a-token' };
    const refused = await inTurn(3, () => get(gw, bad));
    expect(statuses(refused)).toEqual([401, 401, 401]);
    expect(refused[0]?.headers.ratelimit).toBeUndefined();
    const one = await inTurn(3, () => get(gw, storefront('lead-1')));
    expect(statuses(one)).toEqual([200, 200, 429]);
    const two = await get(gw, storefront('lead-2'));
    expect(two.status).toBe(200);
    expect(two.headers['ratelimit-policy']).toBe('"per-lead";q=2;w=60');
  });

  it('answers the forward-auth listener with the same fields and refusals', async () => {
    const port = gw.forwardAuthPort ?? 0;
    const answers = await inTurn(3, () =>
      ask(port, {
        path: '/',
        headers: {
          ...storefront('lead-3'),
          'x-forwarded-uri': '/api/v2/merchant/x',
          'x-forwarded-method': 'GET',
        },
      }),
    );
    expect(statuses(answers)).toEqual([200, 200, 429]);
    expect(answers[0]?.headers.ratelimit).toBe('"per-lead";r=1;t=30');
    expect(answers[2]?.json().code).toBe('rate_limited');
  });
});

describe('rate limits by client address, and on the lookup', () => {
  it('keeps one bucket per client address behind a trusted proxy, and counts lookups', async () => {
    const gw = await withPolicies(
      '    - { name: per-ip, by: client_ip, limit: 2, window_s: 60 }',
      'client_ip: { trusted_proxies: [127.0.0.1/32] }',
    );
    try {
      const from = (ip: string) => server({ 'x-forwarded-for': ip });
      expect(statuses(await inTurn(3, () => get(gw, from('203.0.113.7'))))).toEqual([200, 200, 429]);
      expect(statuses(await inTurn(1, () => get(gw, from('203.0.113.8'))))).toEqual([200]);
      const ts = Math.floor(Date.now() / 1000);
      const lookup = () =>
        ask(gw.apiPort, {
          path: '/api/v2/merchant/leads/x?customer_id=cust-1',
          headers: {
            ...from('198.51.100.1'),
            'x-apikey': KEYS.storefront.key,
            'x-timestamp': String(ts),
            'x-leaddigest': leadDigest(KEYS.storefront.secret, 'cust-1', ts),
          },
        });
      expect(statuses(await inTurn(3, lookup))).toEqual([200, 200, 429]);
    } finally {
      await gw.close();
    }
  });

  it('refuses a config whose policy names an unknown key or repeats a name', async () => {
    await expect(
      withPolicies(`    - { name: a, by: key, limit: 1, window_s: 1, keys: [nobody] }
    - { name: a, by: key, limit: 1, window_s: 1 }`),
    ).rejects.toThrow(
      /no key is named "nobody"[\s\S]*duplicate policy name "a"|duplicate policy name "a"[\s\S]*no key is named "nobody"/,
    );
  });
});
