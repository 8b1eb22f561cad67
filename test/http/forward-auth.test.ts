import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { digestLookup, KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { freePort, requires, runs } from '../helpers/optional.js';
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
/** The calls the forward-auth listener answered, as its request log lines record them. */
const authCalls = () =>
  gw.logs.lines
    .map((l) => JSON.parse(l) as { method?: string; path?: string; msg?: string })
    .filter((l) => l.method !== undefined);

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

const NGINX = '/usr/sbin/nginx';
const hasNginx = runs(NGINX, ['-v']);

/** Polls until something answers HTTP on `port` (up to 5 s). */
async function waitForListener(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const up = await ask(port, { path: '/healthz-probe' }).then(
      () => true,
      () => false,
    );
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const SNIPPET = new URL('../../deploy/nginx/leadgate-auth.conf', import.meta.url).pathname;

/** nginx running the shipped snippet, its three upstreams pointed at this test's servers. */
function nginxConfig(dir: string, port: number, auth: number, api: number, up: string): string {
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((t) => `${t}_temp_path ${dir}/${t};`)
    .join(' ');
  return `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off; ${temp}
  upstream leadgate_auth { server 127.0.0.1:${auth}; }
  upstream leadgate_api { server 127.0.0.1:${api}; }
  upstream app { server ${new URL(up).host}; }
  server {
    listen 127.0.0.1:${port};
    include ${SNIPPET};
  }
}
`;
}

describe.runIf(requires('nginx', hasNginx, 'Debian: apt-get install nginx-light'))(
  'behind a real nginx (auth_request)',
  () => {
    let nginx: ChildProcess;
    let port: number;
    beforeAll(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'leadgate-nginx-'));
      for (const t of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, t));
      port = await freePort();
      writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, port, authPort(), gw.apiPort, upstream.url));
      nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
      await waitForListener(port);
    });
    afterAll(() => {
      nginx?.kill('SIGQUIT');
    });

    it('forwards an accepted request with the identity copied by auth_request_set, spoofs replaced', async () => {
      const r = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { ...storefront(), x_lead_id: 'evil' },
      });
      expect(r.status).toBe(200);
      const got = upstream.received.at(-1)?.headers ?? {};
      expect(got['x-lead-id']).toBe('lead-1');
      expect(got['x-api-key-name']).toBe('storefront');
      expect(got['x-api-key-purpose']).toBe('STOREFRONT');
      expect(got.x_lead_id).toBeUndefined();
      expect(got['x-apikey']).toBeUndefined();
      // No lead proven: whether the file removes the client's x-lead-id or passes it to leadgate,
      // which refuses it (CONTRACT §10), the backend never receives it.
      const count = upstream.received.length;
      await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web', 'x-lead-id': 'someone-else' },
      });
      expect(upstream.received.slice(count).map((u) => u.headers['x-lead-id'] ?? null)).not.toContain(
        'someone-else',
      );
    });

    it('asks with GET about a POST: the auth call does not name the request itself (CONTRACT §10)', async () => {
      const r = await ask(port, {
        method: 'POST',
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.write.key, 'x-source': 'web' },
        body: '{}',
      });
      expect(r.status).toBe(200);
      expect(upstream.received.at(-1)?.method).toBe('POST');
      expect(authCalls().at(-1)).toMatchObject({ method: 'GET', path: '/_leadgate_auth' });
    });

    it("shows the client leadgate's own refusal: status and problem+json", async () => {
      const count = upstream.received.length;
      const r = await ask(port, { path: '/api/v2/merchant/orders', headers: { 'x-source': 'web' } });
      expect(r.status).toBe(401);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json().code).toBe('missing_api_key');
      const fenced = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.fenced.key, 'x-source': 'web' },
      });
      expect(fenced.status).toBe(403);
      expect(fenced.json().code).toBe('origin_not_allowed');
      expect(upstream.received.length).toBe(count);
    });

    it('routes the lookup to the API listener, which answers it', async () => {
      const r = await ask(port, digestLookup());
      expect(r.status).toBe(200);
      expect(typeof r.json().lead_token).toBe('string');
    });
  },
);

const CADDY = '/usr/bin/caddy';
const hasCaddy = runs(CADDY, ['version']);
const CADDY_SNIPPET = new URL('../../deploy/caddy/leadgate.caddy', import.meta.url).pathname;

describe.runIf(requires('caddy', hasCaddy, 'Debian: apt-get install caddy'))(
  'behind a real Caddy (forward_auth)',
  () => {
    let caddy: ChildProcess;
    let port: number;
    beforeAll(async () => {
      const dir = mkdtempSync(join(tmpdir(), 'leadgate-caddy-'));
      port = await freePort();
      writeFileSync(
        join(dir, 'Caddyfile'),
        `{\n\tadmin off\n\tauto_https off\n}\nhttp://127.0.0.1:${port} {\n\timport ${CADDY_SNIPPET}\n}\n`,
      );
      caddy = spawn(CADDY, ['run', '--adapter', 'caddyfile', '--config', join(dir, 'Caddyfile')], {
        stdio: 'ignore',
        env: {
          PATH: process.env.PATH,
          HOME: dir,
          XDG_DATA_HOME: dir,
          XDG_CONFIG_HOME: dir,
          LEADGATE_AUTH: `127.0.0.1:${authPort()}`,
          LEADGATE_API: `127.0.0.1:${gw.apiPort}`,
          APP_UPSTREAM: new URL(upstream.url).host,
        },
      });
      await waitForListener(port);
    });
    afterAll(() => {
      caddy?.kill('SIGTERM');
    });

    it('forwards an accepted request with the identity from copy_headers, spoofs removed', async () => {
      const r = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { ...storefront(), 'x-lead-id': 'someone-else', 'x-api-key-access': 'WRITE' },
      });
      expect(r.status).toBe(200);
      const got = upstream.received.at(-1)?.headers ?? {};
      expect(got['x-lead-id']).toBe('lead-1');
      expect(got['x-api-key-name']).toBe('storefront');
      expect(got['x-api-key-access']).toBe('READ');
      expect(got['x-apikey']).toBeUndefined();
      expect(got['x-leadtoken']).toBeUndefined();
      // No lead proven (a SERVER key): leadgate sends no x-lead-id, and the client's does not pass.
      const server = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web', 'x-lead-id': 'someone-else' },
      });
      expect(server.status).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-lead-id']).toBeUndefined();
      // A WRITE key has no purpose: neither the placeholder text nor the client's value arrives.
      const writer = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.write.key, 'x-source': 'web', 'x-api-key-purpose': 'SERVER' },
      });
      expect(writer.status).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-api-key-access']).toBe('WRITE');
      expect(upstream.received.at(-1)?.headers['x-api-key-purpose']).toBeUndefined();
    });

    it('asks with GET about a POST: the auth call does not name the request itself (CONTRACT §10)', async () => {
      const r = await ask(port, {
        method: 'POST',
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.write.key, 'x-source': 'web' },
        body: '{}',
      });
      expect(r.status).toBe(200);
      expect(upstream.received.at(-1)?.method).toBe('POST');
      expect(authCalls().at(-1)).toMatchObject({ method: 'GET', path: '/' });
      const read = await ask(port, {
        method: 'DELETE',
        path: '/api/v2/merchant/orders/1',
        headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
      });
      expect(read.status).toBe(403);
      expect(read.json().code).toBe('method_not_allowed');
    });

    it('refuses identity headers in other spellings that Caddy passes to leadgate (CONTRACT §10)', async () => {
      const count = upstream.received.length;
      for (const name of ['X_Lead_Id', 'X.Lead.Id', 'XLeadId', 'X~Api~Key~Purpose']) {
        const r = await ask(port, {
          path: '/api/v2/merchant/orders',
          headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web', [name]: 'lead-evil' },
        });
        expect(r.status).toBe(400);
        expect(r.json().code).toBe('bad_request');
      }
      expect(upstream.received.length).toBe(count);
    });

    it("passes leadgate's refusal to the client as it is, and refuses a client's own nginx pair that disagrees", async () => {
      const count = upstream.received.length;
      const r = await ask(port, { path: '/api/v2/merchant/orders', headers: { 'x-source': 'web' } });
      expect(r.status).toBe(401);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json().code).toBe('missing_api_key');
      // Caddy passes a client's X-Original-* through: leadgate sees two pairs naming different requests.
      const smuggled = await ask(port, {
        path: '/api/v2/merchant/orders',
        headers: { ...storefront(), 'x-original-uri': '/api/v2/merchant/other', 'x-original-method': 'GET' },
      });
      expect(smuggled.status).toBe(400);
      expect(smuggled.json().code).toBe('bad_request');
      expect(upstream.received.length).toBe(count);
    });

    it('routes the lookup to the API listener, which answers it', async () => {
      const r = await ask(port, digestLookup());
      expect(r.status).toBe(200);
      expect(typeof r.json().lead_token).toBe('string');
    });
  },
);
