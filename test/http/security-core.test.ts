import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest, signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

type Gw = Awaited<ReturnType<typeof startTestGateway>>;

const HOST = ['Host', '127.0.0.1'] as const;
const server = [HOST, ['x-apikey', KEYS.server.key], ['x-source', 'web']] as const;
const ROTATING = 'sk_rotating_key_0000000000001';
const rotatingKey = `
  - name: rot
    key: "${ROTATING}"
    access_type: READ
    purpose: STOREFRONT
    signing_secrets:
      - { kid: "2026-11", secret: "new-signing-secret-2026-11-0123456789" }
      - { kid: "2026-08", secret: "old-signing-secret-2026-08-0123456789" }
`;

/**
 * The rules of the security core (CONTRACT §3 and §5) that mutation testing found unguarded, each
 * tried over a real connection: what is refused never reaches the upstream, and what reaches it
 * carries only the headers the gateway allows.
 */
let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => upstream.close());

/** One raw exchange: the answers, and what reached the upstream meanwhile. */
async function send(gw: Gw, parts: string[]) {
  const before = upstream.arrived.length;
  const result = await raw(gw.apiPort, parts, { until: (t) => responses(t).length >= 1 });
  return { answers: responses(result.text), reached: upstream.arrived.slice(before) };
}

describe('the path is checked whole, after the prefix too', () => {
  let gw: Gw;
  beforeAll(async () => {
    gw = await startTestGateway(writeConfig({ upstream: upstream.url }));
  });
  afterAll(async () => gw.close());

  it.each([
    ['an allowed escape does not excuse dot segments', '/api/v2/merchant/orders/../../../admin%20x'],
    ['an allowed escape does not excuse a repeated slash', '/api/v2/merchant/orders//admin%20x'],
    ['an allowed escape does not excuse a dot segment', '/api/v2/merchant/orders/./a%20b'],
    ['a backslash after the prefix', '/api/v2/merchant/orders\\..\\..\\admin'],
    ['a ";" parameter after the prefix', '/api/v2/merchant/orders;jsessionid=1'],
    ['a malformed escape after the prefix', '/api/v2/merchant/orders/%zz'],
    ['an escape of a character that must be sent as it is', '/api/v2/merchant/orders/%2e%2e/x'],
    ['an escape that is not UTF-8', '/api/v2/merchant/orders/%ff'],
  ])('refuses %s with 400, forwarding nothing', async (_name, path) => {
    const { answers, reached } = await send(gw, [request(`GET ${path} HTTP/1.1`, server)]);
    expect(answers[0]?.status).toBe(400);
    expect(JSON.parse(answers[0]?.body ?? '{}').code).toBe('bad_path');
    expect(reached).toEqual([]);
  });

  it('forwards a canonical path with an allowed escape, as it was sent', async () => {
    const { answers, reached } = await send(gw, [
      request('GET /api/v2/merchant/orders/a%20b HTTP/1.1', server),
    ]);
    expect(answers[0]?.status).toBe(200);
    expect(reached.map((r) => r.url)).toEqual(['/api/v2/merchant/orders/a%20b']);
  });
});

describe('a lead digest is exactly 64 hex digits', () => {
  let gw: Gw;
  beforeAll(async () => {
    gw = await startTestGateway(writeConfig({ upstream: upstream.url }));
  });
  afterAll(async () => gw.close());

  const lookup = (digest: (valid: string) => string) => {
    const ts = Math.floor(Date.now() / 1000);
    return ask(gw.apiPort, {
      path: '/api/v2/merchant/leads/x?customer_id=cust-1',
      headers: {
        'x-apikey': KEYS.storefront.key,
        'x-source': 'web',
        'x-timestamp': String(ts),
        'x-leaddigest': digest(leadDigest(KEYS.storefront.secret, 'cust-1', ts)),
      },
    });
  };

  it('refuses a valid digest with one character more (the hex decoder would drop it: a replay)', async () => {
    for (const suffix of ['0', 'f', 'g', ' x']) {
      const r = await lookup((valid) => `${valid}${suffix}`);
      expect(r.status).toBe(401);
      expect(r.json().code).toBe('invalid_digest');
    }
  });

  it('refuses a valid digest behind a prefix', async () => {
    const r = await lookup((valid) => `0${valid}`);
    expect(r.status).toBe(401);
    expect(r.json().code).toBe('invalid_digest');
  });

  it('accepts the valid digest itself', async () => {
    expect((await lookup((valid) => valid)).status).toBe(200);
  });
});

describe('lead tokens and signing secrets', () => {
  let gw: Gw;
  beforeAll(async () => {
    gw = await startTestGateway(writeConfig({ upstream: upstream.url, keys: `${keysYaml()}${rotatingKey}` }));
  });
  afterAll(async () => gw.close());

  const orders = (apiKey: string, token: string) =>
    ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { 'x-apikey': apiKey, 'x-source': 'web', 'x-leadtoken': token },
    });
  const now = () => Math.floor(Date.now() / 1000);

  it('with one signing_secret, checks a token with that secret whatever kid it names', async () => {
    for (const kid of ['anything', '2026-11', '']) {
      const token = signLeadToken(KEYS.storefront.secret, 'lead-1', { now: now(), ttlS: 600, kid });
      const r = await orders(KEYS.storefront.key, token);
      expect(r.status).toBe(200);
      expect(upstream.received.at(-1)?.headers['x-lead-id']).toBe('lead-1');
    }
    const token = signLeadToken('another-secret-000000000000', 'lead-1', { now: now(), ttlS: 600, kid: 'x' });
    expect((await orders(KEYS.storefront.key, token)).status).toBe(401);
  });

  it.each([
    ['not a token at all', 'garbage'],
    ['three dots of nothing', '..'],
    ['a header that is not JSON', 'bm90IGpzb24.e30.sig'],
    ['a header that is JSON null', `${Buffer.from('null').toString('base64url')}.e30.sig`],
  ])('answers a malformed token (%s) against a key with several secrets with 401', async (_name, token) => {
    const r = await orders(ROTATING, token);
    expect(r.status).toBe(401);
    expect(r.json().code).toBe('invalid_lead_token');
  });
});

describe.each(['undici', 'http-proxy'] as const)('what the upstream receives, on %s', (engine) => {
  let trusting: Gw;
  let direct: Gw;
  beforeAll(async () => {
    trusting = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        engine,
        extra: 'client_ip: { trusted_proxies: [127.0.0.1/32] }',
      }),
    );
    direct = await startTestGateway(writeConfig({ upstream: upstream.url, engine }));
  });
  afterAll(async () => {
    await trusting.close();
    await direct.close();
  });

  it('drops the headers a client names in its Connection header, whatever their case and spacing', async () => {
    const { answers, reached } = await send(direct, [
      request('GET /api/v2/merchant/orders HTTP/1.1', [
        ...server,
        ['Connection', 'X-Hop-A,  x-hop-b ,keep-alive'],
        ['X-Hop-A', 'a'],
        ['x-hop-b', 'b'],
        ['x-kept', 'kept'],
      ]),
    ]);
    expect(answers[0]?.status).toBe(200);
    const h = reached[0]?.headers ?? {};
    expect(h['x-hop-a']).toBeUndefined();
    expect(h['x-hop-b']).toBeUndefined();
    expect(h['x-kept']).toBe('kept');
  });

  it('never drops framing for a Connection header that names it: the body arrives whole', async () => {
    const { answers } = await send(direct, [
      request(
        'POST /api/v2/merchant/orders HTTP/1.1',
        [
          HOST,
          ['x-apikey', KEYS.write.key],
          ['x-source', 'web'],
          ['Connection', 'content-length, host'],
          ['Content-Length', '5'],
        ],
        'hello',
      ),
    ]);
    expect(answers[0]?.status).toBe(200);
    expect(upstream.received.at(-1)?.body.toString()).toBe('hello');
    expect(upstream.received.at(-1)?.headers.host).toBeDefined();
  });

  it.each([
    ['x-forwarded-host', 'evil.example'],
    ['x-forwarded-port', '8443'],
    ['proxy-authorization', 'Basic ZXZpbDpldmls'],
    ['x-real-ip', '6.6.6.6'],
    ['forwarded', 'for=6.6.6.6;proto=https'],
    ['proxy-connection', 'keep-alive'],
    ['keep-alive', 'timeout=5'],
    ['te', 'trailers'],
    ['trailer', 'x-evil'],
    ['x-apikey', KEYS.server.key],
  ])('never passes a client %s on', async (name, value) => {
    const base: ReadonlyArray<readonly [string, string]> =
      name === 'x-apikey' ? [HOST, ['x-source', 'web']] : server;
    const { answers, reached } = await send(direct, [
      request('GET /api/v2/merchant/orders HTTP/1.1', [...base, [name, value]]),
    ]);
    expect(answers[0]?.status).toBe(200);
    expect(reached[0]?.headers[name]).toBeUndefined();
  });

  it('from a trusted proxy, extends its X-Forwarded-For chain and keeps its X-Forwarded-Proto', async () => {
    const { reached } = await send(trusting, [
      request('GET /api/v2/merchant/orders HTTP/1.1', [
        ...server,
        ['X-Forwarded-For', '203.0.113.7, 198.51.100.9'],
        ['X-Forwarded-Proto', 'https'],
      ]),
    ]);
    expect(reached[0]?.headers['x-forwarded-for']).toBe('203.0.113.7, 198.51.100.9, 127.0.0.1');
    expect(reached[0]?.headers['x-forwarded-proto']).toBe('https');
  });

  it('from a trusted proxy, replaces an X-Forwarded-Proto that is not http or https', async () => {
    for (const proto of ['httpsx', 'xhttps', 'HTTPS', 'ftp', 'https, http']) {
      const { reached } = await send(trusting, [
        request('GET /api/v2/merchant/orders HTTP/1.1', [...server, ['X-Forwarded-Proto', proto]]),
      ]);
      expect(reached[0]?.headers['x-forwarded-proto']).toBe('http');
    }
  });

  it('from a trusted proxy without X-Forwarded-For, sends the peer alone', async () => {
    const { reached } = await send(trusting, [request('GET /api/v2/merchant/orders HTTP/1.1', server)]);
    expect(reached[0]?.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(reached[0]?.headers['x-forwarded-proto']).toBe('http');
  });

  it('from a client that is not a trusted proxy, believes neither header', async () => {
    const { reached } = await send(direct, [
      request('GET /api/v2/merchant/orders HTTP/1.1', [
        ...server,
        ['X-Forwarded-For', '203.0.113.7'],
        ['X-Forwarded-Proto', 'https'],
      ]),
    ]);
    expect(reached[0]?.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(reached[0]?.headers['x-forwarded-proto']).toBe('http');
  });
});
