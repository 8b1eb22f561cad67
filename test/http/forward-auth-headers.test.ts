import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLeadToken } from '../../src/client/index.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

type Header = readonly [string, string];

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;

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

const HOST: Header = ['Host', '127.0.0.1'];
const server: Header[] = [HOST, ['x-apikey', KEYS.server.key], ['x-source', 'web']];
const writer: Header[] = [HOST, ['x-apikey', KEYS.write.key], ['x-source', 'web']];
const storefront = (): Header[] => [
  HOST,
  ['x-apikey', KEYS.storefront.key],
  ['x-source', 'web'],
  ['x-leadtoken', signLeadToken(KEYS.storefront.secret, 'lead-1')],
];
/** nginx's pair naming GET /api/v2/merchant/orders. */
const nginxPair: Header[] = [
  ['X-Original-Method', 'GET'],
  ['X-Original-URI', '/api/v2/merchant/orders'],
];

/** One forward-auth call from a raw socket: its answer and problem code. */
async function call(line: string, headers: readonly Header[]) {
  const r = await raw(gw.forwardAuthPort ?? 0, [request(line, headers)], {
    until: (t) => responses(t).length >= 1,
  });
  const answer = responses(r.text)[0];
  const code = answer?.body ? (JSON.parse(answer.body) as { code?: string }).code : undefined;
  return { status: answer?.status, headers: answer?.headers ?? {}, code };
}

describe('forward-auth: client copies of identity and credential headers (CONTRACT §10)', () => {
  it.each([
    'X.Lead.Id',
    'X_Lead_Id',
    'XLeadId',
    'x-lead-id!',
    'x-lead-id',
    'X-Api-Key-Name',
    'x~api~key~access',
    'X-Api-Key-Purpose',
    'X_Request_Id',
    'X.ApiKey',
    'x_leadtoken',
    'X+Lead+Digest',
  ])('refuses a call carrying %s with 400 bad_request', async (name) => {
    const r = await call('GET /_auth HTTP/1.1', [...server, ...nginxPair, [name, 'lead-evil']]);
    expect(r.status).toBe(400);
    expect(r.code).toBe('bad_request');
    expect(r.headers['content-type']).toBe('application/problem+json');
  });

  it.each([
    ['Connection', 'keep-alive, X-Lead-Id'],
    ['Connection', 'close, x.api.key.purpose'],
    ['Proxy-Connection', 'x-api-key-access'],
    ['Trailer', 'X-Lead-Id'],
  ])('refuses a call whose %s line names an identity header (%s)', async (name, value) => {
    const r = await call('GET /_auth HTTP/1.1', [...storefront(), ...nginxPair, [name, value]]);
    expect(r.status).toBe(400);
    expect(r.code).toBe('bad_request');
  });

  it("accepts the proxy's own x-request-id and a Connection line naming nothing of leadgate's", async () => {
    const r = await call('GET /_auth HTTP/1.1', [
      ...storefront(),
      ...nginxPair,
      ['X-Request-Id', 'edge-1'],
      ['Connection', 'keep-alive, x-custom'],
    ]);
    expect(r.status).toBe(200);
    expect(r.headers['x-lead-id']).toBe('lead-1');
  });
});

describe('forward-auth: the allow answer names what Envoy must remove', () => {
  it('names the identity headers leadgate did not set, and the credentials', async () => {
    const plain = await call('GET /_auth HTTP/1.1', [...server, ...nginxPair]);
    expect(plain.status).toBe(200);
    expect(plain.headers['x-envoy-auth-headers-to-remove']?.split(', ').sort()).toEqual([
      'x-apikey',
      'x-lead-id',
      'x-leaddigest',
      'x-leadtoken',
    ]);
    const lead = await call('GET /_auth HTTP/1.1', [...storefront(), ...nginxPair]);
    expect(lead.headers['x-lead-id']).toBe('lead-1');
    expect(lead.headers['x-envoy-auth-headers-to-remove']?.split(', ').sort()).toEqual([
      'x-apikey',
      'x-leaddigest',
      'x-leadtoken',
    ]);
    const write = await call('GET /_auth HTTP/1.1', [...writer, ...nginxPair]);
    expect(write.headers['x-envoy-auth-headers-to-remove']?.split(', ')).toContain('x-api-key-purpose');
  });
});

describe("forward-auth: the call's own method wins where it names the request (Envoy ext_authz)", () => {
  it.each([
    ['X-Original-Method', 'X-Original-URI'],
    ['X-Forwarded-Method', 'X-Forwarded-Uri'],
  ])('a POST under the prefix with %s: GET is 400 bad_request for any key', async (m, u) => {
    for (const key of [server, writer]) {
      const r = await call('POST /api/v2/merchant/orders HTTP/1.1', [
        ...key,
        ['Content-Length', '0'],
        [m, 'GET'],
        [u, '/api/v2/merchant/orders'],
      ]);
      expect(r.status).toBe(400);
      expect(r.code).toBe('bad_request');
    }
  });

  it('a GET under the prefix with a pair naming another URI is 400; a DELETE elsewhere too', async () => {
    const uri = await call('GET /api/v2/merchant/orders HTTP/1.1', [
      ...server,
      ['X-Forwarded-Method', 'GET'],
      ['X-Forwarded-Uri', '/api/v2/merchant/other'],
    ]);
    expect(uri.status).toBe(400);
    expect(uri.code).toBe('bad_request');
    const del = await call('DELETE /ext-authz/api/v2/merchant/orders HTTP/1.1', [
      ...server,
      ['X-Original-Method', 'GET'],
      ['X-Original-URI', '/api/v2/merchant/orders'],
    ]);
    expect(del.status).toBe(400);
    expect(del.code).toBe('bad_request');
  });

  it('judges the call itself: a READ key POST is 403, a WRITE key POST 200 (a pair that agrees is fine)', async () => {
    const read = await call('POST /api/v2/merchant/orders HTTP/1.1', [...server, ['Content-Length', '0']]);
    expect(read.status).toBe(403);
    expect(read.code).toBe('method_not_allowed');
    const write = await call('POST /api/v2/merchant/orders HTTP/1.1', [
      ...writer,
      ['Content-Length', '0'],
      ['X-Forwarded-Method', 'POST'],
      ['X-Forwarded-Uri', '/api/v2/merchant/orders'],
    ]);
    expect(write.status).toBe(200);
    expect(write.headers['x-api-key-access']).toBe('WRITE');
  });

  it('checks method overrides on this listener too: 403 method_not_allowed for a READ key', async () => {
    for (const override of ['X-HTTP-Method-Override', 'X_Method_Override', 'X.Http.Method']) {
      const r = await call('GET /api/v2/merchant/orders HTTP/1.1', [...server, [override, 'GET, DELETE']]);
      expect(r.status).toBe(403);
      expect(r.code).toBe('method_not_allowed');
    }
    expect(upstream.received).toHaveLength(0);
  });
});
