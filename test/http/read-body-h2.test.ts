import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import { makePki } from '../helpers/certs.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * A READ key's GET with a body is 413 `body_too_large` on HTTP/2 too
 * (docs/decisions/2026-11-28-bodies-on-read-requests.md): on h2 a request has a body unless its
 * HEADERS frame ended the stream, `content-length` or not. node:http2 over TLS, a real upstream.
 */
let upstream: RecordingUpstream;
let gw: Gateway;
let ca: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  const pki = makePki();
  const pair = pki.server('read-body-h2');
  ca = readFileSync(pki.caCert, 'utf8');
  gw = await startTestGateway(
    writeConfig({
      upstream: upstream.url,
      listenFields: `tls: { cert_file: ${pair.cert}, key_file: ${pair.key} }`,
    }),
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** One h2 request, with a READ key unless told; `body` null ends the stream with the HEADERS frame. */
function ask(
  path: string,
  body: string | null,
  headers: http2.OutgoingHttpHeaders = {},
  key: string = KEYS.server.key,
): Promise<Answer> {
  const session = http2.connect(`https://localhost:${gw.apiPort}`, {
    ca,
    servername: 'localhost',
    host: '127.0.0.1',
  } as never);
  session.on('error', () => {});
  return new Promise<Answer>((resolve, reject) => {
    const stream = session.request(
      { ':path': path, 'x-apikey': key, 'x-source': 'web', ...headers },
      { endStream: body === null },
    );
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', reject);
    stream.on('close', () => {
      session.close();
      resolve({ status, body: Buffer.concat(chunks).toString() });
    });
    if (body !== null) stream.end(body);
  });
}

describe('a READ key on HTTP/2 (CONTRACT §3, issue 47 point 2)', () => {
  it('GET with DATA frames and no content-length: 413 body_too_large, nothing forwarded', async () => {
    const before = upstream.arrived.length;
    const answer = await ask('/api/v2/merchant/orders?h2=data', 'hello upstream');
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).code).toBe('body_too_large');
    expect(upstream.arrived.length).toBe(before);
  });

  it('GET whose HEADERS frame ends the stream: forwarded', async () => {
    const answer = await ask('/api/v2/merchant/orders?h2=none', null);
    expect(answer.status).toBe(200);
    expect(upstream.arrived.at(-1)?.url).toBe('/api/v2/merchant/orders?h2=none');
  });

  it('GET with content-length: 0 and an empty DATA frame: forwarded, as on HTTP/1.1', async () => {
    const answer = await ask('/api/v2/merchant/orders?h2=empty', '', { 'content-length': '0' });
    expect(answer.status).toBe(200);
    expect(upstream.arrived.at(-1)?.url).toBe('/api/v2/merchant/orders?h2=empty');
  });
});

describe('a body on HTTP/2 without content-length', () => {
  it("a WRITE key's POST whose body comes in DATA frames: forwarded with that body", async () => {
    const answer = await ask(
      '/api/v2/merchant/actions?h2=post',
      'hello body',
      { ':method': 'POST' },
      KEYS.write.key,
    );
    expect(answer.status).toBe(200);
    const received = upstream.received.at(-1);
    expect(received?.url).toBe('/api/v2/merchant/actions?h2=post');
    expect(received?.body.toString()).toBe('hello body');
  });
});
