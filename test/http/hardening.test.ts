import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

type Gw = Awaited<ReturnType<typeof startTestGateway>>;

const HOST = ['Host', '127.0.0.1'] as const;
const server = [HOST, ['x-apikey', KEYS.server.key], ['x-source', 'web']] as const;
const writer = [HOST, ['x-apikey', KEYS.write.key], ['x-source', 'web']] as const;
const storefront = [HOST, ['x-apikey', KEYS.storefront.key], ['x-source', 'web']] as const;
const token = (leadId: string) =>
  jwt.sign({ lead_id: leadId, exp: Math.floor(Date.now() / 1000) + 600 }, KEYS.storefront.secret, {
    algorithm: 'HS256',
  });

/** Byte-level hardening (issue 9): every class tried from a raw socket, on both engines. */
describe.each(['undici', 'http-proxy'] as const)('hardening on %s', (engine) => {
  let upstream: RecordingUpstream;
  let gw: Gw;

  beforeAll(async () => {
    upstream = await startRecordingUpstream();
    gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        engine,
        // Far above request_timeout_ms: a body that never ends is the client's 408, never a 504.
        timeoutMs: 10_000,
        extra: 'limits: { request_timeout_ms: 1500, header_timeout_ms: 1000 }',
      }),
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  /** Sends one raw exchange and returns the responses and what reached the upstream meanwhile. */
  async function send(parts: Array<string | number>, opts: Parameters<typeof raw>[2] = {}) {
    const before = upstream.arrived.length;
    const result = await raw(gw.apiPort, parts, opts);
    return { ...result, answers: responses(result.text), reached: upstream.arrived.slice(before) };
  }
  const oneAnswer = { until: (t: string) => responses(t).length >= 1 };

  describe('identity headers spelt with "_" never reach the upstream', () => {
    it('drops every reserved name in its underscore spelling, and every underscore header by default', async () => {
      const { answers, reached } = await send(
        [
          request('GET /api/v2/merchant/orders HTTP/1.1', [
            ...server,
            ['x_lead_id', 'lead-evil'],
            ['X_Api_Key_Access', 'WRITE'],
            ['x_api_key_name', 'evil'],
            ['x_api_key_purpose', 'STOREFRONT'],
            ['x_forwarded_for', '6.6.6.6'],
            ['X_Request_Id', 'evil'],
            ['x_apikey', KEYS.write.key],
            ['x_custom', 'dropped-by-default'],
            ['x-custom', 'kept'],
          ]),
        ],
        oneAnswer,
      );
      expect(answers[0]?.status).toBe(200);
      const h = reached[0]?.headers ?? {};
      expect(Object.keys(h).filter((n) => n.includes('_'))).toEqual([]);
      expect(h['x-api-key-access']).toBe('READ');
      expect(h['x-api-key-name']).toBe('server');
      expect(h['x-lead-id']).toBeUndefined();
      expect(h['x-forwarded-for']).toBe('127.0.0.1');
      expect(h['x-custom']).toBe('kept');
    });

    it('keeps the verified lead id the only one, and drops framing headers spelt with "_"', async () => {
      const { answers, reached } = await send(
        [
          request('GET /api/v2/merchant/orders HTTP/1.1', [
            ...storefront,
            ['x-leadtoken', token('lead-1')],
            ['x_lead_id', 'lead-evil'],
            ['Transfer_Encoding', 'chunked'],
            ['content_length', '5'],
          ]),
        ],
        oneAnswer,
      );
      expect(answers[0]?.status).toBe(200);
      const h = reached[0]?.headers ?? {};
      expect(h['x-lead-id']).toBe('lead-1');
      expect(Object.keys(h).filter((n) => n.includes('_'))).toEqual([]);
    });
  });

  describe('a refused request does not keep its connection or its body', () => {
    it('answers a refused endless POST, closes, and reads only a bounded amount', async () => {
      const r = await send(
        [
          request('POST /api/v2/merchant/orders HTTP/1.1', [
            HOST,
            ['x-source', 'web'],
            ['Content-Length', '1000000000000'],
          ]),
        ],
        { drip: { chunk: Buffer.alloc(64 * 1024, 0x61), everyMs: 5 }, waitMs: 8000 },
      );
      expect(r.closed).toBe(true);
      expect(r.answers[0]?.status).toBe(401);
      expect(r.answers[0]?.headers.connection).toBe('close');
      expect(r.reached).toHaveLength(0);
    });

    it('cuts an authenticated body that never ends at request_timeout_ms with 408', async () => {
      const r = await send(
        [request('POST /api/v2/merchant/orders HTTP/1.1', [...writer, ['Content-Length', '1000000000000']])],
        { drip: { chunk: 'x'.repeat(100), everyMs: 50 }, waitMs: 8000 },
      );
      expect(r.closed).toBe(true);
      expect(r.answers[0]?.status).toBe(408);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').code).toBe('request_timeout');
    });

    it('keeps a refused request without a body on a live connection', async () => {
      const r = await send(
        [
          request('GET /api/v2/merchant/orders HTTP/1.1', [HOST, ['x-source', 'web']]),
          request('GET /api/v2/merchant/orders HTTP/1.1', [...server]),
        ],
        { until: (t) => responses(t).length >= 2 },
      );
      expect(r.answers.map((a) => a.status)).toEqual([401, 200]);
    });
  });

  describe('lead ids are validated', () => {
    it.each([
      ['CR LF', 'lead-1\r\nx-api-key-access: WRITE'],
      ['NUL', 'lead\u0000'],
      ['DEL', 'lead\u007f'],
      ['non-Latin-1', 'lead-\u4e00'],
      ['Latin-1', 'lead-\u00e9'],
      ['leading space', ' lead-1'],
      ['blanks only', '   '],
      ['129 characters', 'a'.repeat(129)],
    ])('refuses a signed token whose lead_id holds %s, and serves on', async (_name, leadId) => {
      const r = await send(
        [request('GET /api/v2/merchant/orders HTTP/1.1', [...storefront, ['x-leadtoken', token(leadId)]])],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(401);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').code).toBe('invalid_lead_token');
      expect(r.reached).toHaveLength(0);
      const after = await send([request('GET /api/v2/merchant/orders HTTP/1.1', [...server])], oneAnswer);
      expect(after.answers[0]?.status).toBe(200);
    });

    it('accepts a 128-character visible-ASCII lead id', async () => {
      const id = `${'~'.repeat(64)}${'!'.repeat(64)}`;
      const r = await send(
        [request('GET /api/v2/merchant/orders HTTP/1.1', [...storefront, ['x-leadtoken', token(id)]])],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(200);
      expect(r.reached[0]?.headers['x-lead-id']).toBe(id);
    });
  });

  describe('paths', () => {
    it.each([
      '/api/v2/merchant/leads/lead-2/',
      '/api/v2/merchant/leads/%ZZ',
      '/api/v2/merchant/leads;v=1/x',
      '/api/v2/merchant/LEADS/x',
      '/api/v2/merchant/Leads/x',
      '/api/v2/merchant/l%65ads/x',
      '/api/v2/merchant/leads/',
      '/api/v2/merchant/leads/%c0%ae',
      '/api/v2/merchant/..;/..;/internal/admin',
      '/api/v2/merchant/orders/..;/leads/x',
      '/api/v2/merchant/orders;jsessionid=1',
      '/api/v2/merchant/orders%3bx=1',
      '/api/v2/merchant\\..\\admin',
      '/api/v2/merchant/orders#frag',
      '/api/v2/merchant/%c0%ae%c0%ae/x',
      '/api/v2/merchant/leads/lead-1%3f/x',
      '/api/v2/merchant/leads/lead-1%3F/x',
      '/api/v2/merchant/leads/lead-1%23/x',
    ])('answers %s with 400 bad_path and forwards nothing', async (path) => {
      const r = await send(
        [request(`GET ${path} HTTP/1.1`, [...storefront, ['x-leadtoken', token('lead-1')]])],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(400);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').code).toBe('bad_path');
      expect(r.reached).toHaveLength(0);
    });

    it('answers the lookup in its exact spelling only, with the token lead', async () => {
      const r = await send(
        [
          request('GET /api/v2/merchant/leads/lead-2 HTTP/1.1', [
            ...storefront,
            ['x-leadtoken', token('lead-1')],
          ]),
        ],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(200);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').lead._id).toBe('lead-1');
      expect(r.reached).toHaveLength(0);
    });
  });

  describe('methods, header counts and framing', () => {
    it('refuses a plain OPTIONS with a READ key', async () => {
      const r = await send([request('OPTIONS /api/v2/merchant/orders HTTP/1.1', [...server])], oneAnswer);
      expect(r.answers[0]?.status).toBe(403);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').code).toBe('method_not_allowed');
      expect(r.reached).toHaveLength(0);
    });

    it.each([101, 2100])('answers %i headers with 431 and forwards nothing', async (count) => {
      const many = Array.from({ length: count - 4 }, (_v, i) => [`x-h${i % 50}`, '1'] as const);
      const r = await send(
        [
          request(
            'POST /api/v2/merchant/orders HTTP/1.1',
            [...writer, ['Content-Length', '4'], ...many],
            'body',
          ),
        ],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(431);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').code).toBe('headers_too_large');
      expect(r.reached).toHaveLength(0);
    });

    it('forwards 100 headers whole', async () => {
      const many = Array.from({ length: 95 }, (_v, i) => [`x-h${i}`, String(i)] as const);
      const r = await send(
        [
          request(
            'POST /api/v2/merchant/orders HTTP/1.1',
            [...writer, ['Content-Length', '4'], ...many, ['x-last', 'y']],
            'body',
          ),
        ],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(200);
      expect(r.answers[0]?.body).toBe('body');
      expect(r.reached[0]?.headers['x-last']).toBe('y');
    });

    it('sends 100 Continue only after authentication', async () => {
      const refused = await send(
        [
          request('POST /api/v2/merchant/orders HTTP/1.1', [
            HOST,
            ['x-source', 'web'],
            ['Content-Length', '4'],
            ['Expect', '100-continue'],
          ]),
        ],
        oneAnswer,
      );
      expect(refused.text.startsWith('HTTP/1.1 401')).toBe(true);
      expect(refused.text).not.toContain('100 Continue');
      const accepted = await send(
        [
          request('POST /api/v2/merchant/orders HTTP/1.1', [
            ...writer,
            ['Content-Length', '4'],
            ['Expect', '100-continue'],
          ]),
          200,
          'body',
        ],
        { until: (t) => responses(t).length >= 2 },
      );
      expect(accepted.text.startsWith('HTTP/1.1 100 Continue\r\n')).toBe(true);
      expect(accepted.text).toContain('HTTP/1.1 200');
      expect(accepted.reached[0]?.headers.expect).toBeUndefined();
    });

    it.each([
      [
        'Transfer-Encoding other than chunked',
        'POST',
        [['Transfer-Encoding', 'identity, chunked']],
        '4\r\nbody\r\n0\r\n\r\n',
      ],
      [
        'two Transfer-Encoding headers',
        'POST',
        [
          ['Transfer-Encoding', 'chunked'],
          ['Transfer-Encoding', 'chunked'],
        ],
        '0\r\n\r\n',
      ],
      ['a second Host', 'GET', [['Host', 'evil.example']], ''],
      [
        'two Content-Length headers',
        'POST',
        [
          ['Content-Length', '4'],
          ['Content-Length', '4'],
        ],
        'body',
      ],
    ] as const)('refuses %s with 400', async (_name, method, extra, body) => {
      const r = await send(
        [request(`${method} /api/v2/merchant/orders HTTP/1.1`, [...writer, ...extra], body)],
        oneAnswer,
      );
      expect(r.answers[0]?.status).toBe(400);
      expect(r.reached).toHaveLength(0);
    });

    it.each([
      ['no HTTP version', 'GET /api/v2/merchant/orders\r\n\r\n'],
      ['HTTP/2.0', request('GET /api/v2/merchant/orders HTTP/2.0', [...server])],
      [
        'a Host that is no host',
        request('GET /api/v2/merchant/orders HTTP/1.1', [['Host', 'a b@c'], ...server.slice(1)]),
      ],
      ['no Host on HTTP/1.1', request('GET /api/v2/merchant/orders HTTP/1.1', server.slice(1))],
    ])('refuses a request with %s with 400 and closes', async (_name, bytes) => {
      const r = await send([bytes], { waitMs: 3000 });
      expect(r.answers[0]?.status).toBe(400);
      expect(r.closed).toBe(true);
      expect(r.reached).toHaveLength(0);
    });

    it('answers CONNECT with 400 and closes', async () => {
      const r = await send([request('CONNECT 127.0.0.1:22 HTTP/1.1', [...server])]);
      expect(r.answers[0]?.status).toBe(400);
      expect(JSON.parse(r.answers[0]?.body ?? '{}').code).toBe('bad_request');
      expect(r.closed).toBe(true);
      expect(r.reached).toHaveLength(0);
    });

    it('answers an Upgrade request with a second request behind it, then closes', async () => {
      const r = await send(
        [
          request('GET /api/v2/merchant/orders HTTP/1.1', [
            ...server,
            ['Connection', 'Upgrade'],
            ['Upgrade', 'websocket'],
          ]) + request('GET /api/v2/merchant/orders HTTP/1.1', [...server]),
        ],
        { waitMs: 3000 },
      );
      expect(r.closed).toBe(true);
      expect(r.answers[0]?.status).toBe(200);
      expect(r.answers[0]?.headers.connection).toBe('close');
      for (const got of r.reached) expect(got.headers.upgrade).toBeUndefined();
    });
  });

  it('answers 504 no sooner than timeout_ms, from its own timer', async () => {
    const slow = await startRecordingUpstream();
    slow.behave(() => {});
    const g = await startTestGateway(writeConfig({ upstream: slow.url, engine, timeoutMs: 200 }));
    try {
      const t0 = Date.now();
      const r = await raw(
        g.apiPort,
        [request('GET /api/v2/merchant/orders HTTP/1.1', [...server])],
        oneAnswer,
      );
      const elapsed = Date.now() - t0;
      expect(responses(r.text)[0]?.status).toBe(504);
      expect(elapsed).toBeGreaterThanOrEqual(195);
    } finally {
      await g.close();
      await slow.close();
    }
  });
});

describe('underscore_headers: pass', () => {
  it('passes underscore headers, but never a reserved or framing name in that spelling', async () => {
    const upstream = await startRecordingUpstream();
    const gw = await startTestGateway(
      writeConfig({ upstream: upstream.url, upstreamFields: 'underscore_headers: pass' }),
    );
    try {
      const r = await raw(
        gw.apiPort,
        [
          request('GET /api/v2/merchant/orders HTTP/1.1', [
            ...server,
            ['x_custom', 'passed'],
            ['x_lead_id', 'lead-evil'],
            ['X_Forwarded_For', '6.6.6.6'],
            ['transfer_encoding', 'chunked'],
            ['content_length', '5'],
          ]),
        ],
        { until: (t) => responses(t).length >= 1 },
      );
      expect(responses(r.text)[0]?.status).toBe(200);
      const h = upstream.arrived[0]?.headers ?? {};
      expect(h.x_custom).toBe('passed');
      expect(Object.keys(h).filter((n) => n.includes('_'))).toEqual(['x_custom']);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });
});
