import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leadDigest, signLeadToken } from '../../src/client/index.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp.js';
import { serve } from '../helpers/process.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const SERVER = 2;
const CLIENT = 3;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const traceparent = (traceId: string, spanId: string, flags: '00' | '01') =>
  `00-${traceId}-${spanId}-${flags}`;
const storefront = { 'x-apikey': KEYS.storefront.key, 'x-source': 'mobile' };
const LEAD = { _id: 'L1', customer_id: 'cust-secret-1', name: 'Ada' };

let receiver: OtlpReceiver;
let upstream: RecordingUpstream;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  upstream = await startRecordingUpstream();
  // The backend answers the lead resolver under /internal and every forwarded request with 200.
  upstream.behave((req, res) => {
    if (req.url?.startsWith('/internal/leads')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(LEAD));
    } else res.writeHead(200).end('ok');
  });
});
afterAll(async () => {
  await upstream.close();
  await receiver.close();
});

function gatewayConfig(tracing: string): string {
  return writeConfig({
    upstream: upstream.url,
    leads: null,
    extra: `tracing: ${tracing}
leads:
  upstream: { path: "/internal/leads?customer_id={customer_id}", cache_ttl_s: 0 }`,
  });
}

const byKind = (spans: ReceivedSpan[], kind: number) => spans.filter((s) => s.kind === kind);
const headersFor = (url: string) =>
  upstream.arrived.filter((r) => r.url.startsWith(url)).at(-1)?.headers ?? {};

describe('tracing with sample_ratio 0: the client’s sampled flag decides (parent-based)', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    gw = await startTestGateway(gatewayConfig(`{ otlp_endpoint: "${receiver.url}", sample_ratio: 0 }`));
  });
  afterAll(() => gw.close());

  it('exports a server span under the client’s span and an upstream span whose id the upstream receives', async () => {
    const [traceId, parentId] = [hex(16), hex(8)];
    const path = `/api/v2/merchant/orders/${hex(4)}?page=2`;
    const res = await ask(gw.apiPort, {
      path,
      headers: {
        ...storefront,
        'x-leadtoken': signLeadToken(KEYS.storefront.secret, 'lead-1'),
        traceparent: traceparent(traceId, parentId, '01'),
        tracestate: 'vendor=abc',
      },
    });
    expect(res.status).toBe(200);
    const spans = await receiver.trace(traceId, 2);
    const [server] = byKind(spans, SERVER);
    const [call] = byKind(spans, CLIENT);
    expect(server?.parentSpanId).toBe(parentId);
    expect(server?.name).toBe('GET /api/v2/merchant/*');
    expect(server?.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/v2/merchant/*',
      'http.response.status_code': 200,
      'leadgate.code': 'ok',
      'leadgate.key': 'storefront',
    });
    expect(server?.service).toBe('leadgate');
    expect(call?.parentSpanId).toBe(server?.spanId);
    expect(call?.attributes['http.response.status_code']).toBe(200);
    const sent = headersFor('/api/v2/merchant/orders/');
    expect(sent.traceparent).toBe(traceparent(traceId, call?.spanId ?? '', '01'));
    expect(sent.tracestate).toBe('vendor=abc');
    // The route is a template: the raw path is nowhere in the spans.
    expect(JSON.stringify(spans)).not.toContain(path.split('?')[0]);
  });

  it('gives a lookup its own route and a child span for the lead resolver call, carried to the backend', async () => {
    const [traceId, parentId] = [hex(16), hex(8)];
    const ts = Math.floor(Date.now() / 1000);
    const res = await ask(gw.apiPort, {
      path: `/api/v2/merchant/leads/x?customer_id=${LEAD.customer_id}`,
      headers: {
        ...storefront,
        'x-timestamp': String(ts),
        'x-leaddigest': leadDigest(KEYS.storefront.secret, LEAD.customer_id, ts),
        traceparent: traceparent(traceId, parentId, '01'),
      },
    });
    expect(res.status).toBe(200);
    const spans = await receiver.trace(traceId, 2);
    const [server] = byKind(spans, SERVER);
    const [resolver] = byKind(spans, CLIENT);
    expect(server?.attributes['http.route']).toBe('/api/v2/merchant/leads/{id}');
    expect(resolver?.name).toBe('GET lead resolver');
    expect(resolver?.parentSpanId).toBe(server?.spanId);
    expect(headersFor('/internal/leads').traceparent).toBe(
      traceparent(traceId, resolver?.spanId ?? '', '01'),
    );
    expect(JSON.stringify(spans)).not.toContain(LEAD.customer_id);
  });

  it('records a refusal with its status and code, and no key it could not name', async () => {
    const traceId = hex(16);
    const res = await ask(gw.apiPort, {
      path: '/api/v2/merchant/orders',
      headers: {
        'x-apikey': 'sk_unknown_key_00000000000000',
        traceparent: traceparent(traceId, hex(8), '01'),
      },
    });
    expect(res.status).toBe(401);
    const [server, ...others] = await receiver.trace(traceId, 1);
    expect(others).toEqual([]);
    expect(server?.attributes).toMatchObject({
      'http.response.status_code': 401,
      'leadgate.code': 'invalid_api_key',
    });
    expect(server?.attributes['leadgate.key']).toBeUndefined();
  });

  it('marks the server and upstream spans as errors when the upstream is down (502)', async () => {
    const down = writeConfig({
      upstream: 'http://127.0.0.1:9',
      extra: `tracing: { otlp_endpoint: "${receiver.url}", sample_ratio: 0 }`,
    });
    const broken = await startTestGateway(down);
    try {
      const traceId = hex(16);
      const res = await ask(broken.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: {
          'x-apikey': KEYS.server.key,
          'x-source': 'web',
          traceparent: traceparent(traceId, hex(8), '01'),
        },
      });
      expect(res.status).toBe(502);
      const spans = await receiver.trace(traceId, 2);
      expect(spans.map((s) => s.statusCode)).toEqual([2, 2]);
      expect(byKind(spans, CLIENT)[0]?.attributes['http.response.status_code']).toBeUndefined();
    } finally {
      await broken.close();
    }
  });

  it('exports nothing for an unsampled request and passes its trace context on unchanged', async () => {
    const unsampled = traceparent(hex(16), hex(8), '00');
    const noParent = `/api/v2/merchant/none/${hex(4)}`;
    await ask(gw.apiPort, {
      path: '/api/v2/merchant/unsampled',
      headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web', traceparent: unsampled, tracestate: 'v=1' },
    });
    await ask(gw.apiPort, { path: noParent, headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' } });
    expect(headersFor('/api/v2/merchant/unsampled').traceparent).toBe(unsampled);
    expect(headersFor('/api/v2/merchant/unsampled').tracestate).toBe('v=1');
    expect(headersFor(noParent).traceparent).toBeUndefined();
    // A sampled request after them: once its spans arrive, the earlier ones would have too.
    const marker = hex(16);
    await ask(gw.apiPort, {
      path: '/api/v2/merchant/x',
      headers: {
        'x-apikey': KEYS.server.key,
        'x-source': 'web',
        traceparent: traceparent(marker, hex(8), '01'),
      },
    });
    await receiver.trace(marker, 2);
    const seen = new Set(receiver.spans.map((s) => s.traceId));
    expect(seen.has(unsampled.split('-')[1] ?? '')).toBe(false);
    const roots = receiver.spans.filter((s) => s.parentSpanId === '' && s.kind === SERVER);
    expect(roots).toEqual([]);
  });
});

describe('tracing with sample_ratio 1', () => {
  it('starts a new trace for a request without traceparent and carries it to the upstream', async () => {
    const gw = await startTestGateway(gatewayConfig(`{ otlp_endpoint: "${receiver.url}", sample_ratio: 1 }`));
    try {
      const path = `/api/v2/merchant/root/${hex(4)}`;
      const res = await ask(gw.apiPort, {
        path,
        headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
      });
      expect(res.status).toBe(200);
      const sent = String(headersFor(path).traceparent);
      const [, traceId, spanId, flags] = sent.split('-');
      expect(flags).toBe('01');
      const spans = await receiver.trace(traceId ?? '', 2);
      const server = byKind(spans, SERVER)[0];
      expect(server?.parentSpanId).toBe('');
      expect(byKind(spans, CLIENT)[0]?.spanId).toBe(spanId);
    } finally {
      await gw.close();
    }
  });
});

describe('tracing from the OTEL_* environment, in a leadgate process', () => {
  it('sends to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, names the service, and flushes on SIGTERM', async () => {
    const otherReceiver = await startOtlpReceiver();
    const config = writeConfig({ upstream: upstream.url });
    const gw = await serve(config, {
      OTEL_EXPORTER_OTLP_ENDPOINT: `${otherReceiver.base}/`,
      OTEL_SERVICE_NAME: 'edge-gw',
    });
    try {
      const traceId = hex(16);
      const res = await ask(gw.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: {
          'x-apikey': KEYS.server.key,
          'x-source': 'web',
          traceparent: traceparent(traceId, hex(8), '01'),
        },
      });
      expect(res.status).toBe(200);
      gw.child.kill('SIGTERM');
      expect(await gw.exited).toBe(0);
      // Exported by the exit's flush, or by the batch before it: either way, before the process ended.
      const spans = otherReceiver.spans.filter((s) => s.traceId === traceId);
      expect(spans).toHaveLength(2);
      expect(spans[0]?.service).toBe('edge-gw');
      expect(new Set(otherReceiver.paths)).toEqual(new Set(['/v1/traces']));
    } finally {
      await gw.stop();
      await otherReceiver.close();
    }
  });
});
