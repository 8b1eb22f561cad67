import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw, request, responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * The forward-auth listener goes through the same entry step as the API listener (src/http/
 * entry.ts): the HTTP/1.1 wire rules and the shutting-down refusal. Raw sockets against a real
 * gateway; every request here carries credentials the listener would otherwise answer 200.
 */
const server = [
  ['x-apikey', KEYS.server.key],
  ['x-source', 'web'],
  ['x-original-method', 'GET'],
  ['x-original-uri', '/api/v2/merchant/orders'],
] as const;
const HOST = ['Host', '127.0.0.1'] as const;
const ask = (more: ReadonlyArray<readonly [string, string]>) =>
  request('GET /_auth HTTP/1.1', [...more, ...server]);

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(async () => upstream.close());

const problemCode = (body: string) => (JSON.parse(body) as { code: string }).code;

describe('forward-auth applies the wire rules', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        extra: `forward_auth: { listen: { host: 127.0.0.1, port: 0 } }
limits: { max_header_count: 8 }`,
      }),
    );
  });
  afterAll(async () => gw.close());
  const port = () => gw.forwardAuthPort ?? 0;

  it('a well-formed call is answered 200 (the control)', async () => {
    const r = await raw(port(), [ask([HOST])], { until: (t) => t.includes('\r\n\r\n') });
    expect(responses(r.text)[0]?.status).toBe(200);
  });

  it('two Host headers: 400 bad_request, and the connection ends', async () => {
    const r = await raw(port(), [ask([HOST, ['Host', 'other.example']])]);
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(400);
    expect(answer?.headers['content-type']).toBe('application/problem+json');
    expect(problemCode(answer?.body ?? '')).toBe('bad_request');
    expect(r.closed).toBe(true);
  });

  it('more headers than limits.max_header_count: 431 headers_too_large', async () => {
    const many = Array.from({ length: 6 }, (_, i) => [`x-extra-${i}`, 'v'] as const);
    const r = await raw(port(), [ask([HOST, ...many])]);
    const [answer] = responses(r.text);
    expect(answer?.status).toBe(431);
    expect(problemCode(answer?.body ?? '')).toBe('headers_too_large');
  });
});

describe('forward-auth refuses while shutting down', () => {
  it('a call completed after the listener stopped is answered 503 shutting_down', async () => {
    // The upstream holds one API request, so the gateway still has a request in flight after its
    // listeners stop accepting; meanwhile a forward-auth call, half sent, is completed.
    let release = () => {};
    upstream.behave((_req, res) => {
      release = () => res.end('ok');
    });
    const gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        timeoutMs: 10_000,
        // A drain long enough for a loaded machine: the 2 s default could end it (and close both
        // connections unanswered) before the half-sent call is completed.
        shutdown: '{ delay_s: 0, timeout_s: 30 }',
        extra: 'forward_auth: { listen: { host: 127.0.0.1, port: 0 } }',
      }),
    );
    try {
      // The forward-auth call is half sent first. Its bytes must have been read by the gateway
      // before the drain (a connection with nothing read yet is idle, and the drain closes idle
      // connections at once: the keep-alive race every server has). The gateway accepts and reads
      // this connection before it can even accept the API connection opened after it, forward that
      // request, and have it arrive at the upstream; so once it has arrived, these bytes are read.
      const socket = net.connect(gw.forwardAuthPort ?? 0, '127.0.0.1');
      let text = '';
      let ended = false;
      socket.on('data', (d: Buffer) => {
        text += d.toString('latin1');
      });
      socket.on('close', () => {
        ended = true;
      });
      await new Promise((r) => socket.once('connect', r));
      const call = ask([HOST]);
      const cut = call.indexOf('x-source');
      socket.write(call.slice(0, cut));

      const before = upstream.arrived.length;
      const held = fetch(`http://127.0.0.1:${gw.apiPort}/api/v2/merchant/orders`, {
        headers: { 'x-apikey': KEYS.server.key, 'x-source': 'web' },
      });
      // This request itself at the upstream, not an earlier one: drained before it is in flight,
      // the gateway would have nothing to finish and close every connection at once.
      while (upstream.arrived.length === before) await new Promise((r) => setTimeout(r, 10));

      const drained = gw.drain();
      const closed = () => gw.logs.text.includes('listener closed; finishing in-flight requests');
      while (!closed()) await new Promise((r) => setTimeout(r, 10));
      socket.write(call.slice(cut));
      while (responses(text).length === 0 && !ended) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const [answer] = responses(text);
      expect(answer?.status).toBe(503);
      expect(problemCode(answer?.body ?? '')).toBe('shutting_down');
      expect(answer?.headers.connection).toBe('close');
      socket.destroy();

      release();
      expect((await held).status).toBe(200);
      await drained;
    } finally {
      upstream.behave((_req, res, body) => res.end(body.length > 0 ? body : 'ok'));
      await gw.close();
    }
  });
});
