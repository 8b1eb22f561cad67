import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask, scrape } from '../helpers/client.js';
import { digestLookup, KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * What a request is counted and logged as when it closes (src/http/close-out.ts): the `kind` of
 * leadgate_request_duration_seconds comes from the phase the request closed in and whether it was
 * refused, the key from what §3 found (also on a refusal), upstream_ms from the upstream's time.
 */
const SHOP = 'https://shop.example';

let upstream: RecordingUpstream;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(
    writeConfig({
      upstream: upstream.url,
      extra: `forward_auth: { listen: { host: 127.0.0.1, port: 0 } }
cors: { origins: ["${SHOP}"] }
log: { requests: all }`,
    }),
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const metrics = () => scrape(gw.adminPort);

/** How `send` moved the duration count of each kind and the requests_total series named. */
async function counted(send: () => Promise<unknown>, series: string): Promise<Record<string, number>> {
  const kinds = ['forward', 'lookup', 'preflight', 'auth', 'refused'];
  const name = (k: string) => `leadgate_request_duration_seconds_count{kind="${k}"}`;
  const before = await metrics();
  await send();
  const after = await waitForChange(before, series);
  const moved: Record<string, number> = {};
  for (const k of kinds) {
    const d = (after.get(name(k)) ?? 0) - (before.get(name(k)) ?? 0);
    if (d !== 0) moved[k] = d;
  }
  moved[series] =
    (after.get(`leadgate_requests_total{${series}}`) ?? 0) -
    (before.get(`leadgate_requests_total{${series}}`) ?? 0);
  return moved;
}

/** The close-out runs when the response closes, a moment after the client has its answer. */
async function waitForChange(before: Map<string, number>, series: string): Promise<Map<string, number>> {
  const key = `leadgate_requests_total{${series}}`;
  for (let i = 0; i < 100; i++) {
    const now = await metrics();
    if ((now.get(key) ?? 0) !== (before.get(key) ?? 0)) return now;
    await new Promise((r) => setTimeout(r, 20));
  }
  return metrics();
}

const lastLine = (requestId: string | string[] | undefined) =>
  JSON.parse(gw.logs.lines.find((l) => l.includes(`"request_id":"${String(requestId)}"`)) ?? '{}') as Record<
    string,
    unknown
  >;

const server = { 'x-apikey': KEYS.server.key, 'x-source': 'web' };

describe('a closed request is counted by the phase it closed in', () => {
  it('forwarded: kind forward, its key, and the upstream time on its log line', async () => {
    let answer: Awaited<ReturnType<typeof ask>> | undefined;
    const moved = await counted(async () => {
      answer = await ask(gw.apiPort, { path: '/api/v2/merchant/orders', headers: server });
    }, 'status="200",code="ok",key="server"');
    expect(moved).toEqual({ forward: 1, 'status="200",code="ok",key="server"': 1 });
    const line = lastLine(answer?.headers['x-request-id']);
    expect(line.key_name).toBe('server');
    expect(typeof line.upstream_ms).toBe('number');
  });

  it('a CORS preflight: kind preflight, no key', async () => {
    const moved = await counted(
      () =>
        ask(gw.apiPort, {
          method: 'OPTIONS',
          path: '/api/v2/merchant/orders',
          headers: { origin: SHOP, 'access-control-request-method': 'GET' },
        }),
      'status="204",code="ok",key=""',
    );
    expect(moved).toEqual({ preflight: 1, 'status="204",code="ok",key=""': 1 });
  });

  it('a lookup answered: kind lookup', async () => {
    const moved = await counted(
      () => ask(gw.apiPort, digestLookup('cust-1')),
      'status="200",code="ok",key="storefront"',
    );
    expect(moved).toEqual({ lookup: 1, 'status="200",code="ok",key="storefront"': 1 });
  });

  it('a lookup refused after it began (no such lead): kind refused, its key kept', async () => {
    const moved = await counted(
      () => ask(gw.apiPort, digestLookup('nobody')),
      'status="404",code="lead_not_found",key="storefront"',
    );
    expect(moved).toEqual({ refused: 1, 'status="404",code="lead_not_found",key="storefront"': 1 });
  });

  it('refused by §3 after its key was found: kind refused, the key named, no upstream time', async () => {
    let answer: Awaited<ReturnType<typeof ask>> | undefined;
    const series = 'status="403",code="origin_not_allowed",key="fenced"';
    const moved = await counted(async () => {
      answer = await ask(gw.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.fenced.key, 'x-source': 'web' },
      });
    }, series);
    expect(moved).toEqual({ refused: 1, [series]: 1 });
    const line = lastLine(answer?.headers['x-request-id']);
    expect(line.key_name).toBe('fenced');
    expect(line.upstream_ms).toBeUndefined();
  });

  it('forward-auth: kind auth when allowed, refused when not', async () => {
    const allowed = await counted(
      () => ask(gw.forwardAuthPort ?? 0, { path: '/api/v2/merchant/orders', headers: server }),
      'status="200",code="ok",key="server"',
    );
    expect(allowed).toEqual({ auth: 1, 'status="200",code="ok",key="server"': 1 });
    const refused = await counted(
      () => ask(gw.forwardAuthPort ?? 0, { path: '/api/v2/merchant/orders', headers: { 'x-source': 'web' } }),
      'status="401",code="missing_api_key",key=""',
    );
    expect(refused).toEqual({ refused: 1, 'status="401",code="missing_api_key",key=""': 1 });
  });

  it('a client that leaves while forwarded: kind forward, 499 client_closed', async () => {
    upstream.behave(() => {}); // never answers
    const series = 'status="499",code="client_closed",key="server"';
    try {
      const moved = await counted(async () => {
        const arrived = upstream.arrived.length;
        const req = http.request({
          host: '127.0.0.1',
          port: gw.apiPort,
          path: '/api/v2/merchant/orders',
          headers: server,
          agent: false,
        });
        req.on('error', () => {});
        req.end();
        while (upstream.arrived.length === arrived) await new Promise((r) => setTimeout(r, 10));
        req.destroy();
      }, series);
      expect(moved).toEqual({ forward: 1, [series]: 1 });
    } finally {
      upstream.behave((_req, res, body) => {
        res.writeHead(200);
        res.end(body.length > 0 ? body : 'ok');
      });
    }
  });
});

describe('a client error the parser raises is counted once and logged, with a request id', () => {
  /** Every requests_total series of `code`, summed: a request counted twice moves it by 2. */
  const total = (m: Map<string, number>, code: string) =>
    [...m]
      .filter(([k]) => k.startsWith('leadgate_requests_total{') && k.includes(`code="${code}"`))
      .reduce((a, [, v]) => a + v, 0);

  it('bytes that are not HTTP/1.1: 400 with the id of its log line, counted once with no key', async () => {
    const series = 'status="400",code="bad_request",key=""';
    const before = await metrics();
    const r = await raw(gw.apiPort, [
      'GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n',
    ]);
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(400);
    const id = answer?.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect((JSON.parse(answer?.body ?? '{}') as { request_id?: string }).request_id).toBe(id);
    const after = await waitForChange(before, series);
    expect(after.get(`leadgate_requests_total{${series}}`)).toBe(
      (before.get(`leadgate_requests_total{${series}}`) ?? 0) + 1,
    );
    expect(total(after, 'bad_request') - total(before, 'bad_request')).toBe(1);
    // nothing of the request was parsed: no method, path or duration on its line
    expect(lastLine(id)).toEqual({
      level: 'info',
      time: expect.any(String),
      service: 'leadgate',
      request_id: id,
      status: 400,
      code: 'bad_request',
      msg: 'request',
    });
  });

  it('a bad chunk in a started request: its exchange answers, counted once, under its key', async () => {
    upstream.behave((req, res) => {
      req.resume();
      req.on('error', () => {});
      req.on('end', () => res.end('ok'));
    });
    try {
      const before = await metrics();
      const head =
        'POST /api/v2/merchant/actions HTTP/1.1\r\nHost: x\r\n' +
        `x-apikey: ${KEYS.write.key}\r\nx-source: web\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const r = await raw(gw.apiPort, [head, '5\r\nhello\r\n', 50, 'zz\r\n']);
      const [answer] = responses(r.text);
      expect(answer?.status).toBe(400);
      const after = await waitForChange(before, 'status="400",code="bad_request",key="writer"');
      // before: once by the exchange (key writer) and once more by the guard (no key)
      expect(total(after, 'bad_request') - total(before, 'bad_request')).toBe(1);
      expect(lastLine(answer?.headers['x-request-id'])).toMatchObject({
        key_name: 'writer',
        code: 'bad_request',
      });
    } finally {
      upstream.behave((_req, res, body) => {
        res.writeHead(200);
        res.end(body.length > 0 ? body : 'ok');
      });
    }
  });

  it('an error behind an answer that closes the connection is never sent: not counted, not logged', async () => {
    const before = await metrics();
    const lines = gw.logs.lines.length;
    // the 404 says Connection: close; the byte after it would be a 400 nobody receives
    const r = await raw(gw.apiPort, ['GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nX']);
    const answers = responses(r.text);
    expect(answers.map((a) => a.status)).toEqual([404]);
    await waitForChange(before, 'status="404",code="not_found",key=""');
    const after = await metrics();
    expect(total(after, 'bad_request') - total(before, 'bad_request')).toBe(0);
    expect(gw.logs.lines.slice(lines).filter((l) => l.includes('"code":"bad_request"'))).toEqual([]);
  });

  it('CONNECT: 400, logged with its method', async () => {
    const r = await raw(gw.apiPort, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']);
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(400);
    const id = answer?.headers['x-request-id'];
    for (let i = 0; i < 50 && lastLine(id).request_id === undefined; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(lastLine(id)).toMatchObject({
      request_id: id,
      method: 'CONNECT',
      status: 400,
      code: 'bad_request',
    });
    expect(lastLine(id)).not.toHaveProperty('path');
  });
});

describe('a connection that sends nothing is not a request', () => {
  let quick: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    quick = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        extra: 'limits: { header_timeout_ms: 300 }\nlog: { requests: all }',
      }),
    );
  });
  afterAll(async () => quick.close());

  it('idle past the header timeout: its 408 is written as before, with no count and no log line', async () => {
    const series = 'status="408",code="request_timeout",key=""';
    const before = await scrape(quick.adminPort);
    const lines = quick.logs.lines.length;
    // a preconnect: nothing sent; then, for contrast, a request half sent
    const idle = await raw(quick.apiPort, [], { until: (t) => t.includes('\r\n\r\n{') });
    const half = await raw(quick.apiPort, ['GET /api/v2/merchant/orders HTTP/1.1\r\nHost: a\r\n']);
    expect(responses(idle.text)[0]?.status).toBe(408);
    expect(responses(half.text)[0]?.status).toBe(408);
    const halfId = responses(half.text)[0]?.headers['x-request-id'];
    expect(halfId).toMatch(/^[0-9a-f-]{36}$/);
    const after = await scrape(quick.adminPort);
    // the half-sent request alone
    expect(
      (after.get(`leadgate_requests_total{${series}}`) ?? 0) -
        (before.get(`leadgate_requests_total{${series}}`) ?? 0),
    ).toBe(1);
    const timeouts = quick.logs.lines.slice(lines).filter((l) => l.includes('"code":"request_timeout"'));
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]).toContain(`"request_id":"${String(halfId)}"`);
  });
});
