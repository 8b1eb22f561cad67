import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import { ask } from '../helpers/client.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { raw } from '../helpers/raw.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

/** CONTRACT §11's PROXY protocol at its edges: who is refused at once, and the source's form. */
const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
const get = `GET /api/v2/merchant/orders HTTP/1.1\r\nHost: x\r\nx-apikey: ${KEYS.server.key}\r\nx-source: web\r\nConnection: close\r\n\r\n`;
const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const counted = async (gw: Gateway, result: string) => {
  const metrics = (await ask(gw.adminPort, { path: '/metrics' })).text;
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith(`leadgate_proxy_protocol_total{listener="api",result="${result}"}`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
};

let upstream: RecordingUpstream;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
});
afterAll(() => upstream.close());

describe('a PROXY signature from a peer not in `from`', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        // 127.0.0.1 (every test client) is not a believed balancer; the header timeout is long
        listenFields: 'proxy_protocol: { from: [10.0.0.0/8], header_timeout_ms: 60000 }',
      }),
    );
  });
  afterAll(() => gw.close());

  it.each([
    ['v2, its 12-byte signature alone', SIG],
    ['v1, `PROXY ` alone', Buffer.from('PROXY ', 'latin1')],
  ])('is closed as soon as the signature is seen (%s), counted refused, not timeout', async (_l, first) => {
    const refusedBefore = await counted(gw, 'refused');
    const timeoutBefore = await counted(gw, 'timeout');
    // far below the 60 s header timeout: the close comes from the signature, not the clock
    const r = await raw(gw.apiPort, [first], { waitMs: 10_000 });
    expect(r.closed).toBe(true);
    expect(r.text).toBe('');
    expect(await counted(gw, 'refused')).toBe(refusedBefore + 1);
    expect(await counted(gw, 'timeout')).toBe(timeoutBefore);
  });

  it('still serves its plain HTTP connections', async () => {
    expect(status((await raw(gw.apiPort, [get])).text)).toBe(200);
  });
});

describe('the PROXY source address', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startTestGateway(
      writeConfig({
        upstream: upstream.url,
        listenFields: 'proxy_protocol: { from: [127.0.0.1/32], header_timeout_ms: 2000 }',
      }),
    );
  });
  afterAll(() => gw.close());

  /** A v2 PROXY header over TCP6 with `src` (16 bytes) as its source. */
  const v2tcp6 = (src: readonly number[]) => {
    const body = Buffer.alloc(36);
    Buffer.from(src).copy(body, 0);
    body[31] = 1; // destination ::1
    body.writeUInt16BE(40000, 32);
    body.writeUInt16BE(443, 34);
    return Buffer.concat([SIG, Buffer.from([0x21, 0x21, 0, 36]), body]);
  };
  const MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 7];

  it.each([
    ['v1 TCP4', 'PROXY TCP4 198.51.100.7 127.0.0.1 40000 443\r\n'],
    ['v1 TCP6 IPv4-mapped', 'PROXY TCP6 ::ffff:198.51.100.7 ::1 40000 443\r\n'],
    ['v2 TCP6 IPv4-mapped', v2tcp6(MAPPED)],
  ])('is the IPv4 form in X-Forwarded-For for an IPv4-mapped source (%s)', async (_l, header) => {
    const r = await raw(gw.apiPort, [header, get]);
    expect(status(r.text)).toBe(200);
    expect(upstream.received.at(-1)?.headers['x-forwarded-for']).toBe('198.51.100.7');
  });

  it.each(['PROXY TCP4 198.51.100.7%x 127.0.0.1 40000 443\r\n', 'PROXY TCP6 fe80::1%eth0 ::1 40000 443\r\n'])(
    'with a zone id is malformed: closed without an answer (%s)',
    async (header) => {
      const before = upstream.arrived.length;
      const malformed = await counted(gw, 'malformed');
      const r = await raw(gw.apiPort, [header, get]);
      expect(r.closed).toBe(true);
      expect(r.text).toBe('');
      expect(upstream.arrived.length).toBe(before);
      expect(await counted(gw, 'malformed')).toBe(malformed + 1);
    },
  );
});
