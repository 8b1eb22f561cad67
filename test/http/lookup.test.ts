import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeLeadDigest } from '../../src/auth/lead-digest.js';
import { signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { nextSecond } from '../helpers/clock.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
let once: Awaited<ReturnType<typeof startTestGateway>>;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(writeConfig({ upstream: upstream.url }));
  once = await startTestGateway(
    writeConfig({ upstream: upstream.url, extra: 'digest: { single_use: true }' }),
  );
  await nextSecond();
});
afterAll(async () => {
  await gw.close();
  await once.close();
  await upstream.close();
});

const now = () => Math.floor(Date.now() / 1000);
const storefront = { 'x-apikey': KEYS.storefront.key, 'x-source': 'web' };
const lookupPath = (customerId?: string, id = '6f1c1c1e-7a43-4b8e-9a57-3a4b2b1d0c9e') =>
  `/api/v2/merchant/leads/${encodeURIComponent(id)}${customerId === undefined ? '' : `?customer_id=${encodeURIComponent(customerId)}`}`;
const digestHeaders = (customerId: string, ts = now(), secret: string = KEYS.storefront.secret) => ({
  ...storefront,
  'x-timestamp': String(ts),
  // the gateway's own HMAC: the client helper refuses an empty customer id, a hostile client need not
  'x-leaddigest': computeLeadDigest(secret, customerId, ts).toString('hex'),
});
type LookupBody = { lead_token: string; expires_in: number; lead: { _id: string; customer_id: string } };

describe('Path B: digest → lookup → lead token → customer-scoped request', () => {
  it('works end to end, and the lookup never reaches the upstream', async () => {
    const before = upstream.received.length;
    const res = await ask(gw.apiPort, { path: lookupPath('cust-1'), headers: digestHeaders('cust-1') });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json<LookupBody>();
    expect(body.lead).toMatchObject({ _id: 'lead-1', customer_id: 'cust-1', email: 'a@example.com' });
    expect(body.expires_in).toBe(3600);
    const claims = jwt.verify(body.lead_token, KEYS.storefront.secret, {
      algorithms: ['HS256'],
    }) as jwt.JwtPayload;
    expect(claims.lead_id).toBe('lead-1');
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);
    expect(upstream.received.length).toBe(before);

    const scoped = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: { ...storefront, 'x-leadtoken': body.lead_token },
    });
    expect(scoped.status).toBe(200);
    expect(upstream.received.at(-1)?.headers['x-lead-id']).toBe('lead-1');
  });

  it.each([
    ['gid://shop/Customer/7:9', 'lead-2'],
    ['kunde 3 ü', 'lead-3'],
  ])('resolves customer id %j (colons, spaces, unicode)', async (customerId, leadId) => {
    const res = await ask(gw.apiPort, { path: lookupPath(customerId), headers: digestHeaders(customerId) });
    expect(res.status).toBe(200);
    expect(res.json<LookupBody>().lead._id).toBe(leadId);
  });

  it('ignores :id when a digest is used', async () => {
    const res = await ask(gw.apiPort, {
      path: lookupPath('cust-1', 'lead-3'),
      headers: digestHeaders('cust-1'),
    });
    expect(res.json<LookupBody>().lead._id).toBe('lead-1');
  });

  it('answers HEAD like GET, without a body', async () => {
    const res = await ask(gw.apiPort, {
      method: 'HEAD',
      path: lookupPath('cust-1'),
      headers: digestHeaders('cust-1'),
    });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(0);
  });
});

describe('lookup rows of CONTRACT §4', () => {
  it("a valid token: 200 for the token's lead, never outliving the token", async () => {
    const t = now();
    const presented = signLeadToken(KEYS.storefront.secret, 'lead-2', { now: t - 3000, ttlS: 3600 });
    const res = await ask(gw.apiPort, {
      path: lookupPath(),
      headers: { ...storefront, 'x-leadtoken': presented },
    });
    expect(res.status).toBe(200);
    const body = res.json<LookupBody>();
    expect(body.lead._id).toBe('lead-2');
    const claims = jwt.decode(body.lead_token) as jwt.JwtPayload;
    expect(claims.exp).toBe(t + 600);
    expect(body.expires_in).toBeLessThanOrEqual(600);
  });

  it('no credential, READ SERVER key: by customer_id, else by :id', async () => {
    const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };
    const byCustomer = await ask(gw.apiPort, { path: lookupPath('cust-1', 'ignored'), headers: server });
    expect(byCustomer.json<LookupBody>().lead._id).toBe('lead-1');
    const byId = await ask(gw.apiPort, { path: lookupPath(undefined, 'lead-3'), headers: server });
    expect(byId.json<LookupBody>().lead._id).toBe('lead-3');
    const token = jwt.verify(byId.json<LookupBody>().lead_token, KEYS.server.secret) as jwt.JwtPayload;
    expect(token.lead_id).toBe('lead-3');
    const undecodable = await ask(gw.apiPort, { path: `${lookupPath()}?customer_id=%FF`, headers: server });
    expect([undecodable.status, undecodable.json().code]).toEqual([400, 'missing_customer_id']);
  });

  it('no credential, WRITE key: by :id', async () => {
    const res = await ask(gw.apiPort, {
      path: lookupPath(undefined, 'lead-2'),
      headers: { 'x-apikey': KEYS.write.key, 'x-source': 'web' },
    });
    expect(res.json<LookupBody>().lead._id).toBe('lead-2');
  });

  it('no such lead: 404 lead_not_found', async () => {
    const byDigest = await ask(gw.apiPort, { path: lookupPath('nobody'), headers: digestHeaders('nobody') });
    expect(byDigest.status).toBe(404);
    expect(byDigest.json().code).toBe('lead_not_found');
    const byToken = await ask(gw.apiPort, {
      path: lookupPath(),
      headers: { ...storefront, 'x-leadtoken': signLeadToken(KEYS.storefront.secret, 'ghost') },
    });
    expect(byToken.json().code).toBe('lead_not_found');
    const byId = await ask(gw.apiPort, {
      path: lookupPath(undefined, 'ghost'),
      headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
    });
    expect(byId.json().code).toBe('lead_not_found');
  });

  it('a storefront key with no credential: 401 missing_lead_credential', async () => {
    const res = await ask(gw.apiPort, { path: lookupPath('cust-1'), headers: storefront });
    expect(res.status).toBe(401);
    expect(res.json().code).toBe('missing_lead_credential');
  });
});

describe('digest refusals over HTTP', () => {
  const refusal = async (path: string, headers: Record<string, string>) => {
    const res = await ask(gw.apiPort, { path, headers });
    const body = res.json();
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.stringify(body)).not.toContain(headers['x-leaddigest'] ?? '\u0000');
    return [res.status, body.code, body.detail];
  };

  it.each([
    [
      'a wrong digest',
      () => [lookupPath('cust-1'), { ...digestHeaders('cust-1'), 'x-leaddigest': 'a'.repeat(64) }],
      401,
      'invalid_digest',
    ],
    [
      "another key's secret",
      () => [lookupPath('cust-1'), digestHeaders('cust-1', now(), KEYS.server.secret)],
      401,
      'invalid_digest',
    ],
    ['another customer', () => [lookupPath('cust-2'), digestHeaders('cust-1')], 401, 'invalid_digest'],
    [
      'no x-timestamp',
      () => {
        const { 'x-timestamp': _drop, ...h } = digestHeaders('cust-1');
        return [lookupPath('cust-1'), h];
      },
      400,
      'invalid_timestamp',
    ],
    [
      'milliseconds',
      () => [lookupPath('cust-1'), { ...digestHeaders('cust-1'), 'x-timestamp': String(Date.now()) }],
      400,
      'invalid_timestamp',
    ],
    [
      'a stale timestamp',
      () => [lookupPath('cust-1'), digestHeaders('cust-1', now() - 301)],
      401,
      'stale_timestamp',
    ],
    [
      'a future timestamp',
      () => [lookupPath('cust-1'), digestHeaders('cust-1', now() + 400)],
      401,
      'stale_timestamp',
    ],
    ['no customer_id', () => [lookupPath(), digestHeaders('cust-1')], 400, 'missing_customer_id'],
    [
      'customer_id twice',
      () => [`${lookupPath('cust-1')}&customer_id=cust-1`, digestHeaders('cust-1')],
      400,
      'missing_customer_id',
    ],
    [
      // A digest over U+FFFD would match if %FF were decoded leniently.
      'an undecodable customer_id',
      () => [`${lookupPath()}?customer_id=%FF`, digestHeaders('\uFFFD')],
      400,
      'missing_customer_id',
    ],
    [
      'an empty customer_id',
      () => [`${lookupPath()}?customer_id=`, digestHeaders('')],
      400,
      'missing_customer_id',
    ],
    [
      'a digest on another endpoint',
      () => ['/api/v2/merchant/orders?customer_id=cust-1', digestHeaders('cust-1')],
      401,
      'digest_not_accepted',
    ],
  ])('%s', async (_name, make, status, code) => {
    const [path, headers] = make() as [string, Record<string, string>];
    const [gotStatus, gotCode, detail] = await refusal(path, headers);
    expect([gotStatus, gotCode]).toEqual([status, code]);
    if (_name === 'milliseconds') expect(detail).toMatch(/seconds/);
  });

  it('refuses a replayed digest when single use is on, and allows a fresh one', async () => {
    const headers = digestHeaders('cust-1');
    expect((await ask(once.apiPort, { path: lookupPath('cust-1'), headers })).status).toBe(200);
    const replay = await ask(once.apiPort, { path: lookupPath('cust-1'), headers });
    expect(replay.status).toBe(401);
    expect(replay.json().code).toBe('replayed_digest');
    // the default gateway (single use off) accepts the same digest again
    expect((await ask(gw.apiPort, { path: lookupPath('cust-1'), headers })).status).toBe(200);
    expect((await ask(gw.apiPort, { path: lookupPath('cust-1'), headers })).status).toBe(200);
  });

  it('refuses a digest and a token that name different leads', async () => {
    const res = await ask(gw.apiPort, {
      path: lookupPath('cust-1'),
      headers: { ...digestHeaders('cust-1'), 'x-leadtoken': signLeadToken(KEYS.storefront.secret, 'lead-2') },
    });
    expect(res.status).toBe(401);
    expect(res.json().code).toBe('invalid_lead_token');
  });
});
