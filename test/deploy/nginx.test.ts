import { describe, expect, it } from 'vitest';
import {
  behindProxyRules,
  expectProblem,
  remaining,
  server,
  setUpBehind,
  storefront,
} from '../helpers/behind-proxy.js';
import { KEYS } from '../helpers/fixture.js';
import { requires } from '../helpers/optional.js';
import { hasNginx, startNginx } from '../helpers/proxies.js';

describe.runIf(requires('nginx', hasNginx, 'Debian: apt-get install nginx-light'))(
  'deploy/nginx/leadgate-auth.conf in a real nginx',
  () => {
    const s = setUpBehind(startNginx);
    const orders = '/api/v2/merchant/orders';
    behindProxyRules(s);

    it('gives an admitted answer the RateLimit fields and the request id, one charge each', async () => {
      const a = await s.get(orders, storefront());
      const b = await s.get(orders, storefront());
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.headers['ratelimit-policy']).toBe('"roomy";q=100;w=60');
      expect(remaining(b.headers.ratelimit)).toBe(remaining(a.headers.ratelimit) - 1);
      expect(s.upstream.received.at(-1)?.headers['x-request-id']).toBe(b.headers['x-request-id']);
    });

    it("gives the client leadgate's RateLimit fields, not the backend's as well", async () => {
      s.upstream.behave((_req, res) => {
        res.writeHead(200, { ratelimit: '"upstream";r=999;t=1', 'ratelimit-policy': '"upstream";q=999;w=1' });
        res.end('ok');
      });
      try {
        const r = await s.get(orders, storefront());
        expect(r.status).toBe(200);
        expect(r.headers['ratelimit-policy']).toBe('"roomy";q=100;w=60');
        expect(r.headers.ratelimit).toMatch(/^"roomy";r=\d+;t=\d+$/);
      } finally {
        s.upstream.behave((_req, res, body) => {
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          res.end(body.length > 0 ? body : 'ok');
        });
      }
    });

    it("replaces a client's identity headers, drops other spellings, and ignores its Connection line", async () => {
      const r = await s.get(orders, {
        ...storefront(),
        connection: 'close, X-Lead-Id, X-Api-Key-Name, X-Api-Key-Access, X-Api-Key-Purpose, X-Request-Id',
        'x-lead-id': 'someone-else',
        'x-api-key-name': 'admin',
        'x-request-id': 'chosen-by-client',
        X_Lead_Id: 'evil',
        'X.Lead.Id': 'evil',
      });
      expect(r.status).toBe(200);
      const got = s.upstream.received.at(-1)?.headers ?? {};
      expect(got['x-lead-id']).toBe('lead-1');
      expect(got['x-api-key-name']).toBe('storefront');
      expect(got['x-api-key-access']).toBe('READ');
      expect(got['x-api-key-purpose']).toBe('STOREFRONT');
      expect(got['x-request-id']).toBe(r.headers['x-request-id']);
      expect(Object.keys(got).filter((h) => h.replace(/[^a-z0-9]/g, '') === 'xleadid')).toEqual([
        'x-lead-id',
      ]);
      expect(got['x-apikey']).toBeUndefined();
      expect(got['x-leadtoken']).toBeUndefined();
      const none = await s.get(orders, { ...server(), 'x-lead-id': 'someone-else' });
      expect(none.status).toBe(200);
      expect(s.upstream.received.at(-1)?.headers['x-lead-id']).toBeUndefined();
    });

    it("refuses a client's X-Forwarded-* pair naming another request (400)", async () => {
      const r = await s.get(orders, {
        ...storefront(),
        'x-forwarded-method': 'GET',
        'x-forwarded-uri': '/api/v2/merchant/admin',
      });
      expectProblem(r, 400, 'bad_request');
    });

    it('asks with GET about a POST: the auth call does not name the request itself (CONTRACT §10)', async () => {
      const r = await s.get(orders, { 'x-apikey': KEYS.write.key, 'x-source': 'web' }, '127.0.0.9', 'POST');
      expect(r.status).toBe(200);
      expect(s.upstream.received.at(-1)?.method).toBe('POST');
      const calls = s.gw.logs.lines
        .map((l) => JSON.parse(l) as { method?: string; path?: string })
        .filter((l) => l.method !== undefined);
      expect(calls.at(-1)).toMatchObject({ method: 'GET', path: '/_leadgate_auth' });
    });

    it("passes the backend's own 401 and 403 on untouched: only leadgate's refusals go to error_page", async () => {
      s.upstream.behave((req, res) => {
        res.writeHead(req.url?.endsWith('/401') ? 401 : 403, { 'content-type': 'text/plain' });
        res.end('from the backend');
      });
      try {
        for (const status of [401, 403]) {
          const r = await s.get(`${orders}/${status}`, server());
          expect(r.status).toBe(status);
          expect(r.text).toBe('from the backend');
          expect(r.headers['content-type']).toBe('text/plain');
        }
      } finally {
        s.upstream.behave((_req, res, body) => {
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          res.end(body.length > 0 ? body : 'ok');
        });
      }
    });
  },
);
