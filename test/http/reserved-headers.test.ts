import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldName } from '../../src/auth/header-names.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

type Gw = Awaited<ReturnType<typeof startTestGateway>>;
type Header = readonly [string, string];

const HOST: Header = ['Host', '127.0.0.1'];
const server: Header[] = [HOST, ['x-apikey', KEYS.server.key], ['x-source', 'web']];
const writer: Header[] = [HOST, ['x-apikey', KEYS.write.key], ['x-source', 'web']];
const token = (leadId: string) =>
  jwt.sign({ lead_id: leadId, exp: Math.floor(Date.now() / 1000) + 600 }, KEYS.storefront.secret, {
    algorithm: 'HS256',
  });
const storefront = (): Header[] => [
  HOST,
  ['x-apikey', KEYS.storefront.key],
  ['x-source', 'web'],
  ['x-leadtoken', token('lead-1')],
];

/** What no client may send on, folded: identity, credential and forwarding headers (CONTRACT §10). */
const CANONICAL = new Set([
  'x-lead-id',
  'x-api-key-name',
  'x-api-key-access',
  'x-api-key-purpose',
  'x-request-id',
  'x-apikey',
  'x-leadtoken',
  'x-leaddigest',
  'x-forwarded-for',
]);
const FOLDED = new Set([...CANONICAL].map(foldName));

/** Client copies in the spellings a backend reads as the real names. */
const SPELLINGS: Header[] = [
  ['X.Lead.Id', 'lead-evil'],
  ['X~Lead~Id', 'lead-evil'],
  ['X_Lead_Id', 'lead-evil'],
  ['XLeadId', 'lead-evil'],
  ['x-lead-id!', 'lead-evil'],
  ["x'lead'id", 'lead-evil'],
  ['-x-lead-id', 'lead-evil'],
  ['x-lead-id', 'lead-evil'],
  ['X~Api~Key~Purpose', 'STOREFRONT'],
  ['X+Api+Key+Name', 'admin'],
  ['x.api.key.access', 'WRITE'],
  ['X|Api|Key|Access', 'WRITE'],
  ['X-Request.Id', 'evil'],
  ['x*apikey', KEYS.write.key],
  ['X^LeadToken', 'evil'],
  ['x#lead#digest', 'evil'],
  ['X-Forwarded.For', '6.6.6.6'],
];

const OVERRIDES: Header[][] = [
  [['X-HTTP-Method-Override', 'DELETE']],
  [['X-Method-Override', 'PUT']],
  [['X-HTTP-Method', 'DELETE']],
  [['x-http-method-override', 'delete']],
  [['X_HTTP_Method_Override', 'POST']],
  [['X.Http.Method.Override', 'PATCH']],
  [['XHttpMethod', 'DELETE']],
  [['X-HTTP-Method-Override', 'GET, DELETE']],
  [
    ['X-HTTP-Method-Override', 'GET'],
    ['X-HTTP-Method-Override', 'DELETE'],
  ],
  [
    ['X-HTTP-Method-Override', 'GET'],
    ['X-Method-Override', 'POST'],
  ],
];

const oneAnswer = { until: (t: string) => responses(t).length >= 1 };

describe.each(['undici', 'http-proxy'] as const)('reserved headers on the API listener (%s)', (engine) => {
  let upstream: RecordingUpstream;
  let gw: Gw;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    // `pass`: the underscore spellings are stopped by the reserved-name rule, not by the policy.
    gw = await startTestGateway(
      writeConfig({ upstream: upstream.url, engine, upstreamFields: 'underscore_headers: pass' }),
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  async function send(line: string, headers: readonly Header[]) {
    const before = upstream.arrived.length;
    const r = await raw(gw.apiPort, [request(line, headers)], oneAnswer);
    return { answer: responses(r.text)[0], reached: upstream.arrived.slice(before) };
  }
  /** Header names at the backend that a backend reads as a reserved one, other than the real one. */
  const smuggled = (h: Record<string, unknown>) =>
    Object.keys(h).filter((n) => FOLDED.has(foldName(n)) && !CANONICAL.has(n));

  it('never passes an identity, credential or forwarding header in any spelling (a key that proved no lead)', async () => {
    const { answer, reached } = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      ...server,
      ...SPELLINGS,
      ['x.custom', 'kept'],
    ]);
    expect(answer?.status).toBe(200);
    const h = reached[0]?.headers ?? {};
    expect(smuggled(h)).toEqual([]);
    expect(
      Object.keys(h)
        .filter((n) => FOLDED.has(foldName(n)))
        .sort(),
    ).toEqual(['x-api-key-access', 'x-api-key-name', 'x-api-key-purpose', 'x-forwarded-for', 'x-request-id']);
    expect(h['x-api-key-name']).toBe('server');
    expect(h['x-api-key-access']).toBe('READ');
    expect(h['x-api-key-purpose']).toBe('SERVER');
    expect(h['x-request-id']).toBe(answer?.headers['x-request-id']);
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x.custom']).toBe('kept');
  });

  it("keeps the verified lead id the only one, whatever the client's spellings", async () => {
    const { answer, reached } = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      ...storefront(),
      ...SPELLINGS,
    ]);
    expect(answer?.status).toBe(200);
    const h = reached[0]?.headers ?? {};
    expect(smuggled(h)).toEqual([]);
    expect(h['x-lead-id']).toBe('lead-1');
    expect(h['x-api-key-purpose']).toBe('STOREFRONT');
  });

  it.each([
    ['close, X-Lead-Id, X-Api-Key-Name, X-Api-Key-Access, X-Api-Key-Purpose, X-Request-Id'],
    ['keep-alive, x-lead-id, x-api-key-purpose'],
    ['X.Lead.Id, x_api_key_name, X-Forwarded-For'],
  ])('a Connection line naming identity headers (%s) removes none of leadgate’s', async (connection) => {
    const { answer, reached } = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      ...storefront(),
      ['Connection', connection],
      ['X_Lead_Id', 'lead-evil'],
      ['X.Lead.Id', 'lead-evil'],
    ]);
    expect(answer?.status).toBe(200);
    const h = reached[0]?.headers ?? {};
    expect(h['x-lead-id']).toBe('lead-1');
    expect(h['x-api-key-name']).toBe('storefront');
    expect(h['x-api-key-access']).toBe('READ');
    expect(h['x-api-key-purpose']).toBe('STOREFRONT');
    expect(h['x-request-id']).toBe(answer?.headers['x-request-id']);
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(smuggled(h)).toEqual([]);
  });

  it('also with two Connection lines', async () => {
    const { answer, reached } = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      ...storefront(),
      ['Connection', 'keep-alive'],
      ['Connection', 'X-Lead-Id, X-Api-Key-Access'],
    ]);
    expect(answer?.status).toBe(200);
    expect(reached[0]?.headers['x-lead-id']).toBe('lead-1');
    expect(reached[0]?.headers['x-api-key-access']).toBe('READ');
  });

  it.each(OVERRIDES.map((o) => [o.map(([n, v]) => `${n}: ${v}`).join(' + '), o] as const))(
    'a READ key naming another method by override (%s) is 403 method_not_allowed',
    async (_label, override) => {
      const { answer, reached } = await send('GET /api/v2/merchant/orders HTTP/1.1', [
        ...server,
        ...override,
      ]);
      expect(answer?.status).toBe(403);
      expect(JSON.parse(answer?.body ?? '{}').code).toBe('method_not_allowed');
      expect(reached).toHaveLength(0);
    },
  );

  it('a READ STOREFRONT key is refused the override before its token is read; no key is 401 first', async () => {
    const sf = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      ...storefront(),
      ['X-HTTP-Method-Override', 'DELETE'],
    ]);
    expect(sf.answer?.status).toBe(403);
    expect(JSON.parse(sf.answer?.body ?? '{}').code).toBe('method_not_allowed');
    const none = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      HOST,
      ['x-source', 'web'],
      ['X-HTTP-Method-Override', 'DELETE'],
    ]);
    expect(none.answer?.status).toBe(401);
    expect(JSON.parse(none.answer?.body ?? '{}').code).toBe('missing_api_key');
    expect([...sf.reached, ...none.reached]).toHaveLength(0);
  });

  it('passes overrides that name GET or HEAD for a READ key, and any for a WRITE key', async () => {
    const read = await send('GET /api/v2/merchant/orders HTTP/1.1', [
      ...server,
      ['X-HTTP-Method-Override', 'HEAD, get'],
      ['X-Method-Override', ''],
    ]);
    expect(read.answer?.status).toBe(200);
    expect(read.reached[0]?.headers['x-http-method-override']).toBe('HEAD, get');
    const write = await send('POST /api/v2/merchant/orders HTTP/1.1', [
      ...writer,
      ['X-HTTP-Method-Override', 'DELETE'],
      ['Content-Length', '0'],
    ]);
    expect(write.answer?.status).toBe(200);
    expect(write.reached[0]?.method).toBe('POST');
    expect(write.reached[0]?.headers['x-http-method-override']).toBe('DELETE');
  });
});
