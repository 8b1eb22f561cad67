import { describe, expect, it } from 'vitest';
import { behindProxyRules, expectProblem, server, setUpBehind, storefront } from '../helpers/behind-proxy.js';
import { KEYS } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { hasCaddy, startCaddy } from '../helpers/proxies.js';

describe.runIf(requires('caddy', hasCaddy, 'Debian: apt-get install caddy'))(
  'deploy/caddy/leadgate.caddy in a real Caddy',
  () => {
    const s = setUpBehind(startCaddy);
    const orders = '/api/v2/merchant/orders';
    behindProxyRules(s);

    it('forwards an accepted request with the identity from copy_headers, spoofs removed', async () => {
      const r = await s.get(orders, {
        ...storefront(),
        'x-lead-id': 'someone-else',
        'x-api-key-access': 'WRITE',
      });
      expect(r.status).toBe(200);
      const got = s.upstream.received.at(-1)?.headers ?? {};
      expect(got['x-lead-id']).toBe('lead-1');
      expect(got['x-api-key-name']).toBe('storefront');
      expect(got['x-api-key-access']).toBe('READ');
      expect(got['x-apikey']).toBeUndefined();
      expect(got['x-leadtoken']).toBeUndefined();
      // No lead proven (a SERVER key): leadgate sends no x-lead-id, and the client's does not pass.
      const plain = await s.get(orders, { ...server(), 'x-lead-id': 'someone-else' });
      expect(plain.status).toBe(200);
      expect(s.upstream.received.at(-1)?.headers['x-lead-id']).toBeUndefined();
      // A WRITE key has no purpose: neither the placeholder text nor the client's value arrives.
      const writer = await s.get(orders, {
        'x-apikey': KEYS.write.key,
        'x-source': 'web',
        'x-api-key-purpose': 'SERVER',
      });
      expect(writer.status).toBe(200);
      expect(s.upstream.received.at(-1)?.headers['x-api-key-access']).toBe('WRITE');
      expect(s.upstream.received.at(-1)?.headers['x-api-key-purpose']).toBeUndefined();
    });

    it("keeps leadgate's identity headers when a client's Connection line names them", async () => {
      const r = await s.get(orders, {
        ...storefront(),
        connection: 'close, X-Lead-Id, X-Api-Key-Name, X-Api-Key-Access, X-Api-Key-Purpose, X-Request-Id',
      });
      expect(r.status).toBe(200);
      const got = s.upstream.received.at(-1)?.headers ?? {};
      expect(got['x-lead-id']).toBe('lead-1');
      expect(got['x-api-key-name']).toBe('storefront');
      expect(got['x-api-key-access']).toBe('READ');
      expect(got['x-api-key-purpose']).toBe('STOREFRONT');
      expect(got['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('refuses identity headers in other spellings that Caddy passes to leadgate (CONTRACT §10)', async () => {
      const before = s.upstream.received.length;
      for (const name of ['X_Lead_Id', 'X.Lead.Id', 'XLeadId', 'X~Api~Key~Purpose']) {
        expectProblem(await s.get(orders, { ...server(), [name]: 'lead-evil' }), 400, 'bad_request');
      }
      expect(s.upstream.received.length).toBe(before);
    });

    it("refuses a client's own nginx pair that disagrees with Caddy's (400)", async () => {
      const before = s.upstream.received.length;
      const smuggled = await s.get(orders, {
        ...storefront(),
        'x-original-uri': '/api/v2/merchant/other',
        'x-original-method': 'GET',
      });
      expectProblem(smuggled, 400, 'bad_request');
      expect(s.upstream.received.length).toBe(before);
    });

    it('asks with GET about a POST: the auth call does not name the request itself (CONTRACT §10)', async () => {
      const r = await s.get(orders, { 'x-apikey': KEYS.write.key, 'x-source': 'web' }, '127.0.0.9', 'POST');
      expect(r.status).toBe(200);
      expect(s.upstream.received.at(-1)?.method).toBe('POST');
      const calls = s.gw.logs.lines
        .map((l) => JSON.parse(l) as { method?: string; path?: string })
        .filter((l) => l.method !== undefined);
      expect(calls.at(-1)).toMatchObject({ method: 'GET', path: '/' });
    });
  },
);
