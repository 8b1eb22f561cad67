import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import { makePki, type TestPki } from '../helpers/certs.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { responses } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/**
 * CONTRACT §7's slow-client limits (`header_timeout_ms`, `request_timeout_ms`) on every listener
 * variant of §11: plain, TLS HTTP/1.1 only, TLS h2 + HTTP/1.1 (an HTTP/1.1 connection by ALPN),
 * each with and without `proxy_protocol` (connections that send no PROXY header are served as
 * they are; the server behind the PROXY front never listens itself).
 */
let upstream: RecordingUpstream;
let pki: TestPki;
let ca: string;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  pki = makePki();
  ca = readFileSync(pki.caCert, 'utf8');
});
afterAll(() => upstream.close());

type Tls = 'none' | 'h1' | 'h2';
const VARIANTS: ReadonlyArray<readonly [Tls, boolean]> = [
  ['none', false],
  ['none', true],
  ['h1', false],
  ['h1', true],
  ['h2', false],
  ['h2', true],
];

/** Writes `parts` (a number is a pause), drips `drip` every 50 ms, reads until close or `waitMs`. */
async function slowClient(
  port: number,
  mode: Tls,
  head: string,
  drip: string | null,
  waitMs: number,
): Promise<{ text: string; closed: boolean }> {
  const socket =
    mode === 'none'
      ? net.connect(port, '127.0.0.1')
      : tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
  await new Promise<void>((resolve, reject) => {
    socket.once(mode === 'none' ? 'connect' : 'secureConnect', () => resolve());
    socket.once('error', reject);
  });
  if (mode !== 'none') expect((socket as tls.TLSSocket).alpnProtocol).toBe('http/1.1');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | null = null;
    const finish = (closed: boolean) => {
      if (timer !== null) clearInterval(timer);
      clearTimeout(deadline);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed });
    };
    const deadline = setTimeout(() => finish(false), waitMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.write(head);
    if (drip !== null) timer = setInterval(() => socket.writable && socket.write(drip), 50);
  });
}

const name = ([mode, proxy]: readonly [Tls, boolean]) =>
  `${mode === 'none' ? 'plain' : mode === 'h1' ? 'TLS HTTP/1.1' : 'TLS h2 + HTTP/1.1'}${proxy ? ' + proxy_protocol' : ''}`;

describe.each(VARIANTS.map((v) => [name(v), v] as const))(
  'slow clients on a %s listener',
  (_label, variant) => {
    const [mode, proxy] = variant;
    let gw: Gateway;
    beforeAll(async () => {
      const fields: string[] = [];
      if (mode !== 'none') {
        const pair = pki.server(`timeouts-${mode}-${proxy}`);
        fields.push(`tls: { cert_file: ${pair.cert}, key_file: ${pair.key}, http2: ${mode === 'h2'} }`);
      }
      if (proxy) fields.push('proxy_protocol: { from: [127.0.0.1/32], header_timeout_ms: 2000 }');
      gw = await startTestGateway(
        writeConfig({
          upstream: upstream.url,
          listenFields: fields.join(', '),
          extra: 'limits: { header_timeout_ms: 500, request_timeout_ms: 1500 }',
        }),
      );
    });
    afterAll(() => gw.close());

    // Generous: the limits are 0.5 s and 1.5 s; Node checks every `min(1 s, header_timeout_ms)`.
    const WAIT = 15_000;

    it('a request whose headers never end is answered 408 request_timeout (header_timeout_ms)', async () => {
      const r = await slowClient(
        gw.apiPort,
        mode,
        'GET /api/v2/merchant/orders HTTP/1.1\r\nhost: x\r\n',
        null,
        WAIT,
      );
      expect(r.closed).toBe(true);
      expect(responses(r.text)[0]?.status).toBe(408);
      expect(JSON.parse(responses(r.text)[0]?.body ?? '{}').code).toBe('request_timeout');
    });

    it('an authenticated body that never ends is answered 408 request_timeout (request_timeout_ms)', async () => {
      const head =
        'POST /api/v2/merchant/orders HTTP/1.1\r\nhost: x\r\n' +
        `x-apikey: ${KEYS.write.key}\r\nx-source: web\r\ncontent-length: 1000000000\r\n\r\n`;
      const r = await slowClient(gw.apiPort, mode, head, 'x'.repeat(100), WAIT);
      expect(r.closed).toBe(true);
      expect(responses(r.text)[0]?.status).toBe(408);
      expect(JSON.parse(responses(r.text)[0]?.body ?? '{}').code).toBe('request_timeout');
    });
  },
);
