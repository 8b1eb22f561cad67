import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest } from '../../src/client/index.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { type Served, serve } from '../helpers/process.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * Issue 9: hostile bytes thrown at a running `leadgate serve` with a recording upstream. Seeded and
 * bounded for `npm test`; LEADGATE_FUZZ_RUNS and LEADGATE_FUZZ_SEED make a longer or another run.
 * Asserted for every case: the gateway answers HTTP or closes, never dies; nothing reaches the
 * upstream without a valid key in `x-apikey`; every upstream header is the client's own (and not a
 * reserved name in any spelling) or one the gateway derives from a verified credential.
 */
const RUNS = Number(process.env.LEADGATE_FUZZ_RUNS ?? 1200);
const SEED = Number(process.env.LEADGATE_FUZZ_SEED ?? 20261123);

const KINDS = {
  server: { ...KEYS.server, name: 'server', access: 'READ' },
  storefront: { ...KEYS.storefront, name: 'storefront', access: 'READ' },
  writer: { ...KEYS.write, name: 'writer', access: 'WRITE' },
} as const;
type KindName = keyof typeof KINDS;
const LEAD_ID = /^[\x21-\x7e]{1,128}$/;
const DERIVED = new Set(['x-api-key-name', 'x-api-key-access', 'x-api-key-purpose', 'x-lead-id']);
const HOP = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-request-id', 'host', 'connection']);
const FRAMING = new Set(['content-length', 'transfer-encoding']);
const RESERVED = new Set([
  ...DERIVED,
  ...HOP,
  'x-apikey',
  'x-leadtoken',
  'x-leaddigest',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'forwarded',
  'x-real-ip',
]);

/** One generated case: the bytes, and the facts the assertions need. */
interface Case {
  readonly bytes: string;
  /** How many requests the bytes hold (answers to wait for). */
  readonly requests: number;
  /** Header names sent (lower case) and, per name, the values. */
  readonly sent: Map<string, string[]>;
  /** Key kinds whose exact key went in an `x-apikey` header. */
  readonly keys: Set<KindName>;
  /** Lead ids of tokens signed with the secret of a key kind, per kind. */
  readonly signed: Map<KindName, Set<string>>;
}

const now = () => Math.floor(Date.now() / 1000);
const kindArb = fc.constantFrom<KindName>('server', 'storefront', 'writer');
const leadIdArb = fc.oneof(
  fc.constantFrom('lead-1', 'lead-2', 'lead-3', 'a'.repeat(128), 'a'.repeat(129), '', ' ', 'lead 1'),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const noCrLf = (unit: fc.Arbitrary<string>, maxLength = 40) =>
  fc.string({ unit, maxLength }).map((s) => s.replace(/[\r\n]/g, ''));
const valueArb = fc.oneof(
  { weight: 48, arbitrary: fc.stringMatching(/^[ -~]{0,24}$/).map((v) => v.trim()) },
  noCrLf(
    fc.constantFrom('a', '1', ' ', '\t', ',', ';', '=', '%', '\u0000', '\u007f', '\u00e9', '\u00ff', '"'),
  ),
  fc.string({ maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, '')),
);
const nameArb = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.constantFrom(
      'x-lead-id',
      'X_Lead_Id',
      'x_api_key_access',
      'X-Api-Key-Name',
      'x-api-key-purpose',
      'x_apikey',
      'X-APIKEY',
      'x_leadtoken',
      'Transfer_Encoding',
      'content_length',
      'x_forwarded_for',
      'X-Forwarded-For',
      'x-request-id',
      'Forwarded',
      'Connection',
      'Upgrade',
      'Expect',
      'Te',
      'Keep-Alive',
      'Host',
      'x-source',
      'x-timestamp',
      'Origin',
    ),
  },
  { weight: 26, arbitrary: fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,16}$/) },
  { weight: 1, arbitrary: noCrLf(fc.constantFrom('a', ':', ' ', '\u0000', '(', '\u00e9', '_', '-'), 8) },
);

const tokenArb = fc.record({
  kind: kindArb,
  leadId: leadIdArb,
  mode: fc.nat(9),
  life: fc.integer({ min: -60, max: 4000 }),
});
const digestArb = fc.record({
  kind: kindArb,
  customer: fc.constantFrom('cust-1', 'cust-2', '%FF', '\u00fc'),
  skew: fc.integer({ min: -400, max: 400 }),
});
const pathArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      '/api/v2/merchant/orders?page=2',
      '/api/v2/merchant/leads/lead-1',
      '/api/v2/merchant/offers/1',
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '/api/v2/merchant/orders',
      '/api/v2/merchant/leads/lead-1',
      '/api/v2/merchant/leads/x?customer_id=cust-1',
      '/api/v2/merchant/leads/x?customer_id=%FF',
      '/api/v2/merchant/leads/lead-2/',
      '/api/v2/merchant/LEADS/x',
      '/api/v2/merchant/..;/admin',
      '/api/v2/merchant/%2e%2e/x',
      '/api/v2/merchant\\..\\x',
      '/internal/admin',
      '*',
      'http://evil.example/api/v2/merchant/orders',
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.oneof(
          fc.constantFrom('leads', '..', '.', '', ';x', '%2f', '%c0%ae', '%ZZ', '#', '\\', 'L%65ads'),
          noCrLf(fc.constantFrom('a', '%', '~', ' ', '\u00e9'), 6),
        ),
        { maxLength: 4 },
      )
      .map((segments) => `/api/v2/merchant/${segments.join('/')}`),
  },
);
const methodArb = fc.oneof(
  {
    weight: 9,
    arbitrary: fc.constantFrom('GET', 'GET', 'POST', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'PATCH', 'TRACE'),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z!#-]{1,8}$/) },
);
const bodyArb = fc.record({
  framing: fc.constantFrom(
    'none',
    'none',
    'none',
    'length',
    'length',
    'length',
    'chunked',
    'chunked',
    'bad-chunked',
    'short',
    'both',
  ),
  data: fc.string({ unit: 'binary-ascii', maxLength: 64 }),
});

/** Hostile at every spot: methods, versions, names, framing. Mostly answered by the parser. */
const hostileArb = fc
  .record({
    method: methodArb,
    path: pathArb,
    version: fc.oneof(
      { weight: 4, arbitrary: fc.constant('HTTP/1.1') },
      { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 x', '') },
    ),
    key: fc.constantFrom<KindName | 'bogus' | null>('server', 'storefront', 'writer', 'bogus', null),
    source: fc.constantFrom('web', 'mobile', 'tv', undefined),
    token: fc.option(tokenArb, { freq: 2 }),
    digest: fc.option(digestArb, { freq: 3 }),
    extra: fc.array(fc.tuple(nameArb, valueArb), { maxLength: 4 }),
    body: bodyArb,
    twice: fc.boolean(),
  })
  .map(build);

/** Well-framed requests with hostile credentials, names and values: these reach the §3 checks. */
const plausibleArb = fc
  .record({
    method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'OPTIONS'),
    path: pathArb.map((p) => p.replace(/[ #]/g, '')),
    version: fc.constant('HTTP/1.1'),
    key: fc.constantFrom<KindName | 'bogus' | null>(
      'server',
      'server',
      'storefront',
      'writer',
      'writer',
      'bogus',
    ),
    source: fc.constantFrom('web', 'web', 'web', 'mobile', 'mobile', 'tv'),
    token: fc.option(tokenArb, { freq: 2 }),
    digest: fc.oneof({ weight: 8, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: digestArb }),
    extra: fc.array(
      fc.tuple(
        fc.oneof(
          nameArb.filter((n) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(n) && n.toLowerCase() !== 'host'),
        ),
        fc.stringMatching(/^[!-~][ -~]{0,20}$/),
      ),
      { maxLength: 4 },
    ),
    body: fc.record({
      framing: fc.constantFrom('none', 'length', 'chunked'),
      data: fc.string({ maxLength: 40 }),
    }),
    twice: fc.constant(false),
  })
  .map(build);

const caseArb = fc.oneof(hostileArb, plausibleArb);

function build(g: {
  method: string;
  path: string;
  version: string;
  key: KindName | 'bogus' | null;
  source: string | undefined;
  token: { kind: KindName; leadId: string; mode: number; life: number } | null;
  digest: { kind: KindName; customer: string; skew: number } | null;
  extra: Array<[string, string]>;
  body: { framing: string; data: string };
  twice: boolean;
}): (caseId: number) => Case {
  return (caseId) => {
    const headers: Array<[string, string]> = [
      ['Host', '127.0.0.1'],
      ['x-case', String(caseId)],
    ];
    const keys = new Set<KindName>();
    const signed = new Map<KindName, Set<string>>();
    if (g.key === 'bogus') headers.push(['x-apikey', 'sk_bogus_key_000000000000000']);
    else if (g.key !== null) {
      headers.push(['x-apikey', KINDS[g.key].key]);
      keys.add(g.key);
    }
    if (g.source !== undefined) headers.push(['x-source', g.source]);
    if (g.token !== null) {
      // Even modes sign with the secret of the key sent, when there is one: mostly the right secret.
      const t =
        g.key !== null && g.key !== 'bogus' && g.token.mode % 2 === 0 ? { ...g.token, kind: g.key } : g.token;
      let token = jwt.sign({ lead_id: t.leadId, exp: now() + t.life }, KINDS[t.kind].secret, {
        algorithm: 'HS256',
      });
      if (t.mode === 1) token = token.slice(0, -2) + (token.endsWith('A') ? 'BB' : 'AA');
      else if (t.mode === 2)
        token = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${token.split('.')[1]}.`;
      else if (t.mode === 3) token = token.toUpperCase();
      else (signed.get(t.kind) ?? signed.set(t.kind, new Set()).get(t.kind))?.add(t.leadId);
      headers.push([t.mode === 4 ? 'X-LeadToken' : 'x-leadtoken', token]);
    }
    if (g.digest !== null) {
      const ts = now() + g.digest.skew;
      headers.push(['x-timestamp', String(ts)]);
      headers.push(['x-leaddigest', leadDigest(KINDS[g.digest.kind].secret, g.digest.customer, ts)]);
    }
    headers.push(...g.extra);
    const { framing, data } = g.body;
    let body = '';
    if (framing === 'length') headers.push(['Content-Length', String(Buffer.byteLength(data, 'latin1'))]);
    if (framing === 'short') headers.push(['Content-Length', String(data.length + 1)]);
    if (framing === 'both')
      headers.push(['Content-Length', String(data.length)], ['Transfer-Encoding', 'chunked']);
    if (framing === 'chunked' || framing === 'bad-chunked') headers.push(['Transfer-Encoding', 'chunked']);
    if (framing === 'length' || framing === 'short' || framing === 'both') body = data;
    if (framing === 'chunked')
      body = data.length > 0 ? `${data.length.toString(16)}\r\n${data}\r\n0\r\n\r\n` : '0\r\n\r\n';
    if (framing === 'bad-chunked') body = `zz\r\n${data}\r\n0\r\n\r\n`;
    const line = `${g.method} ${g.path}${g.version === '' ? '' : ` ${g.version}`}`;
    const one = request(line, headers, body);
    const sent = new Map<string, string[]>();
    for (const [n, v] of headers) sent.set(n.toLowerCase(), [...(sent.get(n.toLowerCase()) ?? []), v.trim()]);
    return { bytes: g.twice ? one + one : one, requests: g.twice ? 2 : 1, sent, keys, signed };
  };
}

/** What is wrong with one upstream arrival, judged against the case that sent it; null when fine. */
function verdict(c: Case, headers: Record<string, string | string[] | undefined>): string | null {
  const name = String(headers['x-api-key-name'] ?? '');
  const kind = (Object.keys(KINDS) as KindName[]).find((k) => KINDS[k].name === name);
  if (kind === undefined || !c.keys.has(kind))
    return `forwarded without a valid key (x-api-key-name ${name})`;
  if (headers['x-api-key-access'] !== KINDS[kind].access) return 'x-api-key-access not the key access';
  const lead = headers['x-lead-id'];
  if (lead !== undefined) {
    if (typeof lead !== 'string' || !LEAD_ID.test(lead)) return 'x-lead-id breaks the lead id rule';
    if (!c.signed.get(kind)?.has(lead)) return 'x-lead-id not from a token signed with the key secret';
  }
  for (const [n, value] of Object.entries(headers)) {
    if (DERIVED.has(n) || HOP.has(n) || FRAMING.has(n)) continue;
    if (n.includes('_')) return `underscore header ${n} reached the upstream`;
    if (RESERVED.has(n)) return `reserved header ${n} reached the upstream`;
    const own = c.sent.get(n);
    if (own === undefined) return `header ${n} was never sent by the client`;
    for (const part of String(value).split(', ')) {
      if (!own.some((v) => v === part || v.includes(part))) return `header ${n} changed on the way`;
    }
  }
  return null;
}

describe('fuzz: hostile requests against a running gateway', () => {
  let upstream: RecordingUpstream;
  let gw: Served;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await serve(
      writeConfig({
        upstream: upstream.url,
        extra: 'limits: { header_timeout_ms: 400, request_timeout_ms: 600 }',
      }),
      { LEADGATE_WATCH: '0' },
    );
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  it(`survives ${RUNS} generated cases (seed ${SEED}) and lets nothing unauthenticated through`, async () => {
    const cases = new Map<number, Case>();
    let next = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (make) => {
        const id = next++;
        const c = make(id);
        cases.set(id, c);
        const r = await raw(gw.apiPort, [c.bytes], {
          waitMs: 700,
          until: (t) => responses(t, { head: c.bytes.startsWith('HEAD ') }).length >= c.requests,
        });
        if (r.text !== '') expect(r.text).toMatch(/^HTTP\/1\.1 [1-5][0-9]{2} /);
        expect(gw.child.exitCode).toBeNull();
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    expect(gw.child.exitCode).toBeNull();
    const problems: string[] = [];
    for (const got of upstream.arrived) {
      const c = cases.get(Number(got.headers['x-case']));
      const why = c === undefined ? 'an arrival without its case' : verdict(c, got.headers);
      if (why !== null) problems.push(`case ${String(got.headers['x-case'])}: ${why}`);
    }
    expect(problems).toEqual([]);
    // Enough of the cases were accepted for the header checks to mean something.
    expect(upstream.arrived.length).toBeGreaterThan(RUNS / 40);
    const health = await raw(
      gw.apiPort,
      [
        request('GET /api/v2/merchant/orders HTTP/1.1', [
          ['Host', 'x'],
          ['x-apikey', KEYS.server.key],
          ['x-source', 'web'],
        ]),
      ],
      {
        until: (t) => responses(t).length >= 1,
      },
    );
    expect(responses(health.text)[0]?.status).toBe(200);
  }, 120_000);
});
