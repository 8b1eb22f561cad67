import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseProxyHeader, startsWithSignature } from '../../src/listener/proxy-header.js';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

/** A v2 header: command (0 LOCAL, 1 PROXY), family/transport byte, address block, TLVs. */
function v2(cmd: number, fam: number, body: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(body.length);
  return Buffer.concat([SIG, Buffer.from([0x20 | cmd, fam]), len, body]);
}

const v4Block = (src: number[], sport: number) => {
  const b = Buffer.alloc(12);
  Buffer.from(src).copy(b, 0);
  Buffer.from([10, 0, 0, 1]).copy(b, 4);
  b.writeUInt16BE(sport, 8);
  b.writeUInt16BE(443, 10);
  return b;
};

describe('parseProxyHeader (PROXY protocol v1/v2)', () => {
  it('reads v1 TCP4, TCP6 and UNKNOWN, and says where the header ends', () => {
    const line = 'PROXY TCP4 203.0.113.7 10.0.0.1 5555 443\r\n';
    expect(parseProxyHeader(Buffer.from(`${line}GET /`))).toEqual({
      kind: 'proxy',
      length: line.length,
      address: '203.0.113.7',
      port: 5555,
      family: 'IPv4',
    });
    expect(parseProxyHeader(Buffer.from('PROXY TCP6 2001:db8::7 2001:db8::1 1 2\r\n'))).toMatchObject({
      kind: 'proxy',
      address: '2001:db8::7',
      family: 'IPv6',
    });
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n'))).toEqual({ kind: 'local', length: 15 });
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n'))).toMatchObject({
      kind: 'local',
    });
  });

  it('refuses malformed v1 lines', () => {
    for (const line of [
      'PROXY TCP4 203.0.113.7 10.0.0.1 5555\r\n',
      'PROXY TCP4 2001:db8::7 10.0.0.1 1 2\r\n',
      'PROXY TCP4 203.0.113.7 10.0.0.1 65536 443\r\n',
      'PROXY TCP4 203.0.113.7 10.0.0.1 05555 443\r\n',
      'PROXY TCP4  203.0.113.7 10.0.0.1 5555 443\r\n',
      'PROXY TCP5 203.0.113.7 10.0.0.1 5555 443\r\n',
      'PROXY TCP4 203.0.113.007 10.0.0.1 5555 443\r\n',
      `PROXY TCP4 ${'1'.repeat(120)}`,
    ]) {
      expect(parseProxyHeader(Buffer.from(line)), line).toEqual({ kind: 'malformed' });
    }
  });

  it('reads v2 PROXY over IPv4 and IPv6, past TLVs; LOCAL, UNSPEC and unix keep the real peer', () => {
    const tlv = Buffer.from([0x04, 0x00, 0x03, 0x61, 0x62, 0x63]);
    const h4 = v2(1, 0x11, Buffer.concat([v4Block([198, 51, 100, 9], 4321), tlv]));
    expect(parseProxyHeader(Buffer.concat([h4, Buffer.from('rest')]))).toEqual({
      kind: 'proxy',
      length: h4.length,
      address: '198.51.100.9',
      port: 4321,
      family: 'IPv4',
    });
    const six = Buffer.alloc(36);
    Buffer.from('20010db8000000000000000000000007', 'hex').copy(six, 0);
    six.writeUInt16BE(9, 32);
    expect(parseProxyHeader(v2(1, 0x21, six))).toMatchObject({
      kind: 'proxy',
      address: '2001:db8::7',
      port: 9,
    });
    expect(parseProxyHeader(v2(0, 0x00, Buffer.alloc(0)))).toEqual({ kind: 'local', length: 16 });
    expect(parseProxyHeader(v2(0, 0x11, v4Block([1, 2, 3, 4], 1)))).toMatchObject({ kind: 'local' });
    expect(parseProxyHeader(v2(1, 0x00, Buffer.alloc(0)))).toMatchObject({ kind: 'local' });
    expect(parseProxyHeader(v2(1, 0x31, Buffer.alloc(216)))).toMatchObject({ kind: 'local' });
  });

  it('refuses a bad version, command, family, or an address block too short for its family', () => {
    const bad = [
      Buffer.concat([SIG, Buffer.from([0x11, 0x11, 0, 12]), v4Block([1, 2, 3, 4], 1)]),
      v2(2, 0x11, v4Block([1, 2, 3, 4], 1)),
      v2(1, 0x41, v4Block([1, 2, 3, 4], 1)),
      v2(1, 0x13, v4Block([1, 2, 3, 4], 1)),
      v2(1, 0x11, Buffer.alloc(11)),
      v2(1, 0x21, Buffer.alloc(35)),
    ];
    for (const b of bad) expect(parseProxyHeader(b)).toEqual({ kind: 'malformed' });
  });

  it('asks for more on every prefix of a valid header, and says none for HTTP and TLS starts', () => {
    for (const h of [
      Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 5555 443\r\n'),
      v2(1, 0x11, v4Block([1, 2, 3, 4], 1)),
    ]) {
      for (let n = 0; n < h.length; n++) expect(parseProxyHeader(h.subarray(0, n)).kind).toBe('more');
    }
    for (const start of ['POST / HTTP/1.1\r\n', 'PUT /', 'PROPFIND /', 'GET /', '\x16\x03\x01\x02\x00']) {
      expect(parseProxyHeader(Buffer.from(start, 'latin1')).kind).toBe('none');
    }
    expect(parseProxyHeader(Buffer.from('\r\n\r\nGET', 'latin1')).kind).toBe('none');
  });

  it('reads an IPv4-mapped IPv6 source as its IPv4 form (v1 and v2), and refuses a zone id', () => {
    const mapped = Buffer.alloc(36);
    Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 7]).copy(mapped, 0);
    mapped[31] = 1;
    mapped.writeUInt16BE(4000, 32);
    mapped.writeUInt16BE(443, 34);
    const ipv4 = { kind: 'proxy', address: '198.51.100.7', port: 4000, family: 'IPv4' };
    expect(parseProxyHeader(v2(1, 0x21, mapped))).toMatchObject(ipv4);
    expect(parseProxyHeader(Buffer.from('PROXY TCP6 ::ffff:198.51.100.7 ::1 4000 443\r\n'))).toMatchObject(
      ipv4,
    );
    expect(parseProxyHeader(Buffer.from('PROXY TCP6 ::ffff:c633:6407 ::1 4000 443\r\n'))).toMatchObject(ipv4);
    for (const line of [
      'PROXY TCP4 198.51.100.7%x 10.0.0.1 1 2\r\n',
      'PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n',
      'PROXY TCP6 ::ffff:198.51.100.7%x ::1 1 2\r\n',
      'PROXY TCP6 ::1 fe80::1%eth0 1 2\r\n',
    ]) {
      expect(parseProxyHeader(Buffer.from(line)), line).toEqual({ kind: 'malformed' });
    }
  });

  it('tells a whole signature (v1 `PROXY `, v2 12 bytes) from a prefix of one', () => {
    expect(startsWithSignature(Buffer.from('PROXY '))).toBe(true);
    expect(startsWithSignature(Buffer.from('PROXY'))).toBe(false);
    expect(startsWithSignature(SIG)).toBe(true);
    expect(startsWithSignature(SIG.subarray(0, 11))).toBe(false);
    expect(startsWithSignature(Buffer.from('GET / HTTP/1.1\r\n'))).toBe(false);
  });

  it('never throws, and is consistent with itself on any bytes (fuzzed)', () => {
    const starts = fc.constantFrom(Buffer.alloc(0), SIG, Buffer.from('PROXY '), Buffer.from('PROXY TCP4 '));
    fc.assert(
      fc.property(starts, fc.uint8Array({ maxLength: 300 }), (start, tail) => {
        const buf = Buffer.concat([start, Buffer.from(tail)]);
        const r = parseProxyHeader(buf);
        if (r.kind === 'proxy' || r.kind === 'local') {
          expect(r.length).toBeGreaterThan(0);
          expect(r.length).toBeLessThanOrEqual(buf.length);
          // the verdict depends on the header's bytes alone, never on what follows
          expect(parseProxyHeader(Buffer.concat([buf.subarray(0, r.length), Buffer.from('x')]))).toEqual(r);
        }
        if (r.kind === 'proxy') expect(r.port).toBeLessThanOrEqual(65535);
        if (r.kind === 'more') expect(buf.length).toBeLessThan(16 + 65535);
      }),
      { numRuns: 20_000 },
    );
  });
});
