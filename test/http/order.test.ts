import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const HOST = ['Host', '127.0.0.1'] as const;
const writer = [HOST, ['x-apikey', KEYS.write.key], ['x-source', 'web']] as const;
const storefront = [HOST, ['x-apikey', KEYS.storefront.key], ['x-source', 'web']] as const;

/** The smuggling scanner's find: a valid request, then a malformed one, in one segment. */
const validPost = request(
  'POST /api/v2/merchant/orders?cb=1 HTTP/1.1',
  [...writer, ['Content-Type', 'application/x-www-form-urlencoded'], ['Content-Length', '4']],
  '1\r\nZ',
);
const validGet = () =>
  request('GET /api/v2/merchant/orders?cb=2 HTTP/1.1', [
    ...storefront,
    [
      'x-leadtoken',
      jwt.sign({ lead_id: 'lead-1', exp: Math.floor(Date.now() / 1000) + 600 }, KEYS.storefront.secret),
    ],
  ]);

/** Answers in request order (RFC 9112 §9.3.2), issue 16: raw sockets, both engines. */
describe.each(['undici', 'http-proxy'] as const)('answer order on %s', (engine) => {
  let upstream: RecordingUpstream;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    // A slow upstream: the later request's error is ready long before the earlier answer.
    upstream.behave((_req, res, body) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(body.length || 2) });
        res.end(body.length > 0 ? body : 'ok');
      }, 150);
    });
    gw = await startTestGateway(
      writeConfig({ upstream: upstream.url, engine, extra: 'limits: { header_timeout_ms: 600 }' }),
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  const cases: Array<[string, () => Array<string | number>, number, string]> = [
    ['malformed', () => [`${validPost}\r\n0\r\n\r\n`], 400, 'bad_request'],
    ['malformed, after a STOREFRONT GET', () => [`${validGet()}GARBAGE\r\n\r\n`], 400, 'bad_request'],
    [
      'with oversized headers',
      () => [`${validPost}GET /api/v2/merchant/orders HTTP/1.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`],
      431,
      'headers_too_large',
    ],
    [
      'with too many headers',
      () => [
        validPost +
          request('GET /api/v2/merchant/orders HTTP/1.1', [
            ...writer,
            ...Array.from({ length: 120 }, (_v, i) => [`x-h${i}`, '1'] as const),
          ]),
      ],
      431,
      'headers_too_large',
    ],
    ['a CONNECT', () => [`${validPost}CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n`], 400, 'bad_request'],
    [
      'that is too slow',
      () => [`${validPost}GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\n`],
      408,
      'request_timeout',
    ],
  ];

  it.each(cases)(
    'answers a valid request first, whole, then the later one %s, then closes',
    async (_n, parts, status, code) => {
      const before = upstream.received.length;
      const r = await raw(gw.apiPort, parts(), { waitMs: 5000 });
      const answers = responses(r.text);
      expect(answers.map((a) => a.status)).toEqual([200, status]);
      expect(answers[0]?.body).toBe(upstream.received[before]?.body.length ? '1\r\nZ' : 'ok');
      expect(JSON.parse(answers[1]?.body ?? '{}').code).toBe(code);
      expect(answers[1]?.headers.connection).toBe('close');
      expect(r.closed).toBe(true);
      expect(upstream.received.length - before).toBe(1);
    },
  );

  it('answers three pipelined valid requests in order', async () => {
    const r = await raw(gw.apiPort, [validPost + validGet() + validPost], {
      until: (t) => responses(t).length >= 3,
    });
    const answers = responses(r.text);
    expect(answers.map((a) => [a.status, a.body])).toEqual([
      [200, '1\r\nZ'],
      [200, 'ok'],
      [200, '1\r\nZ'],
    ]);
  });
});
