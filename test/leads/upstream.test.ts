import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { digestLookup, KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let backend: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
const LEADS: Record<string, { _id: string; customer_id: string; name: string }> = {
  'c:1': { _id: 'L1', customer_id: 'c:1', name: 'Ada' },
  'c 2': { _id: 'L2', customer_id: 'c 2', name: 'Grace' },
};

beforeAll(async () => {
  backend = await startRecordingUpstream();
  gw = await startTestGateway(
    writeConfig({
      upstream: backend.url,
      timeoutMs: 400,
      leads: null,
      extra: `leads:
  upstream:
    path: "/internal/leads?customer_id={customer_id}"
    by_id_path: "/internal/leads/{id}"
    cache_ttl_s: 60`,
    }),
  );
});
afterAll(async () => {
  await gw.close();
  await backend.close();
});

function serveLeads() {
  backend.behave((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const lead =
      url.pathname === '/internal/leads'
        ? LEADS[url.searchParams.get('customer_id') ?? '']
        : Object.values(LEADS).find((l) => `/internal/leads/${l._id}` === url.pathname);
    if (!lead) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(lead));
  });
}

const now = () => Math.floor(Date.now() / 1000);
const lookup = (customerId: string) => ask(gw.apiPort, digestLookup(customerId));
const metric = async (name: string) => {
  const text = (await ask(gw.adminPort, { path: '/metrics' })).text;
  return Number(new RegExp(`^${name.replace(/[{}"=]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
};

describe('upstream lead resolver, against a real backend', () => {
  it('finds a lead, URL-encoding the customer id, with the key name header', async () => {
    serveLeads();
    const before = backend.received.length;
    const res = await lookup('c:1');
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ lead: { _id: 'L1', name: 'Ada' } });
    const call = backend.received[before];
    expect(call?.url).toBe('/internal/leads?customer_id=c%3A1');
    expect(call?.headers['x-api-key-name']).toBe('storefront');
    expect(call?.headers['x-apikey']).toBeUndefined();
  });

  it('costs the backend one call for a storm of lookups of one customer', async () => {
    serveLeads();
    const before = backend.received.length;
    const hitsBefore = await metric('leadgate_lead_cache_total{result="hit"}');
    const answers = await Promise.all(Array.from({ length: 20 }, () => lookup('c 2')));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    await lookup('c 2');
    expect(backend.received.length - before).toBe(1);
    expect(await metric('leadgate_lead_cache_total{result="hit"}')).toBeGreaterThan(hitsBefore);
  });

  it('times each backend call once in upstream_duration{kind="lookup"}, never a cache hit', async () => {
    serveLeads();
    const count = 'leadgate_upstream_duration_seconds_count{kind="lookup"}';
    const calls = backend.received.length;
    const observed = await metric(count);
    // One call for a customer not cached yet, then answers from the cache; a 404 is a call too.
    for (let i = 0; i < 5; i++) expect((await lookup('c:1-timed')).status).toBe(404);
    LEADS['c:timed'] = { _id: 'L9', customer_id: 'c:timed', name: 'Hedy' };
    for (let i = 0; i < 5; i++) expect((await lookup('c:timed')).status).toBe(200);
    expect(backend.received.length - calls).toBe(2);
    expect((await metric(count)) - observed).toBe(2);
  });

  it('treats 404 as no such lead, and caches that too', async () => {
    serveLeads();
    const before = backend.received.length;
    expect((await lookup('ghost')).json().code).toBe('lead_not_found');
    expect((await lookup('ghost')).json().code).toBe('lead_not_found');
    expect(backend.received.length - before).toBe(1);
  });

  it('looks up by id for a lead token', async () => {
    serveLeads();
    const { signLeadToken } = await import('../../src/client/index.js');
    const res = await ask(gw.apiPort, {
      path: '/api/v2/merchant/leads/any',
      headers: {
        'x-apikey': KEYS.storefront.key,
        'x-source': 'web',
        'x-leadtoken': signLeadToken(KEYS.storefront.secret, 'L1'),
      },
    });
    expect(res.json()).toMatchObject({ lead: { _id: 'L1' } });
  });

  it('answers 502 for malformed JSON and 5xx, 504 when slow, and does not cache failures', async () => {
    backend.behave((_req, res) => res.writeHead(200).end('{not json'));
    const bad = await lookup('fresh-1');
    expect([bad.status, bad.json().code]).toEqual([502, 'upstream_unavailable']);
    expect(gw.logs.text).toMatch(/"level":"error".*malformed JSON/);

    backend.behave((_req, res) => res.writeHead(500).end());
    expect((await lookup('fresh-1')).status).toBe(502);

    // A record whose _id could not travel as x-lead-id: never minted into a token.
    for (const id of ['lead 1', 'lead-1\r\nx: y', '   ', 'lead-\u00e9']) {
      backend.behave((_req, res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ _id: id, customer_id: 'fresh-1' })),
      );
      const refused = await lookup('fresh-1');
      expect([refused.status, refused.json().code]).toEqual([502, 'upstream_unavailable']);
      expect(refused.text).not.toContain('lead_token');
    }
    expect(gw.logs.text).toMatch(/not a valid lead id/);

    backend.behave((_req, res) => {
      setTimeout(() => res.writeHead(404).end(), 1000).unref();
    });
    const slow = await lookup('fresh-1');
    expect([slow.status, slow.json().code]).toEqual([504, 'upstream_timeout']);

    serveLeads();
    LEADS['fresh-1'] = { _id: 'L9', customer_id: 'fresh-1', name: 'Late' };
    expect((await lookup('fresh-1')).json()).toMatchObject({ lead: { _id: 'L9' } });
  });

  it('answers 502 when the backend is down', async () => {
    const down = await startTestGateway(
      writeConfig({
        upstream: 'http://127.0.0.1:9',
        leads: null,
        extra: 'leads: { upstream: { path: "/internal/leads?customer_id={customer_id}" } }',
      }),
    );
    try {
      const ts = now();
      const res = await ask(down.apiPort, {
        path: '/api/v2/merchant/leads/x?customer_id=c1',
        headers: {
          'x-apikey': KEYS.storefront.key,
          'x-source': 'web',
          'x-timestamp': String(ts),
          'x-leaddigest': leadDigest(KEYS.storefront.secret, 'c1', ts),
        },
      });
      expect([res.status, res.json().code]).toEqual([502, 'upstream_unavailable']);
    } finally {
      await down.close();
    }
  });
});
