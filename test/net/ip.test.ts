import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import {
  addressKey,
  createIpMatcher,
  isFourPartDecimal,
  isIPv4Mapped,
  isRange,
  parseAddress,
  parseRange,
  type Range,
} from '../../src/net/ip.js';

const matcher = (...ranges: string[]) => createIpMatcher(ranges.map((r) => parseRange(r) as Range));
const addr = (text: string) => {
  const a = parseAddress(text);
  if (a === null) throw new Error(`test address ${text} did not parse`);
  return a;
};

describe('parseAddress', () => {
  it('reads IPv4-mapped IPv6 as IPv4', () => {
    expect(addr('::ffff:203.0.113.7').toString()).toBe('203.0.113.7');
    expect(addr('::ffff:cb00:7107').toString()).toBe('203.0.113.7');
  });
  it('refuses what is not an address', () => {
    for (const bad of ['', 'localhost', '1.2.3', '256.1.1.1', '1.2.3.4/32', 'fe80::1::2']) {
      expect(parseAddress(bad)).toBeNull();
    }
  });
  // Found by an adversarial probe: ipaddr.js reads these loosely inside IPv6.
  it.each([
    '::ffff:127.000.0.1',
    '::ffff:0x7f.0.0.1',
    '::ffff:0177.0.0.1',
    '::ffff:127.1',
    '::127.0.0.1',
    '::127.0.0.1%lo',
    '::ffff:1.2.3.4.5',
  ])('refuses the loose spelling %s', (text) => {
    expect(parseAddress(text)).toBeNull();
  });
  it('reads the full IPv4-compatible form as the IPv6 address it is, not as IPv4', () => {
    expect(addressKey(addr('0:0:0:0:0:0:127.0.0.1'))).toBe(addressKey(addr('::7f00:1')));
    expect(addr('1::1.2.3.4').kind()).toBe('ipv6');
  });
  it('drops a zone: one address, one key (and one rate-limit bucket)', () => {
    expect(addressKey(addr('2001:db8::99%a'))).toBe(addressKey(addr('2001:db8::99')));
    expect(addressKey(addr('2001:db8::99%b'))).toBe(addressKey(addr('2001:db8::99')));
    expect(addr('::ffff:203.0.113.7%eth0').toString()).toBe('203.0.113.7');
  });
});

describe('parseRange, IPv6 with a dotted part', () => {
  it('reads ::ffff:a.b.c.d/n as IPv4 and refuses loose or deprecated spellings', () => {
    expect(parseRange('::ffff:10.0.0.0/104')).toEqual(parseRange('10.0.0.0/8'));
    expect(typeof parseRange('::10.0.0.0/104')).toBe('string');
    expect(typeof parseRange('::ffff:010.0.0.0/104')).toBe('string');
  });
});

describe('isFourPartDecimal', () => {
  // Node's check stands in for ipaddr.js's (one pass instead of two): the same set, on every line.
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 300 }).map(String),
    fc.constantFrom('00', '01', '007', '0x7f', '-1', '', ' 1', '1 ', '１', '255', '256'),
  );
  const dotted = fc
    .array(octet, { minLength: 1, maxLength: 6 })
    .chain((parts) => fc.constantFrom(parts.join('.'), `${parts.join('.')}.`, parts.join('..')));
  const texts = fc.oneof(dotted, fc.string(), fc.stringMatching(/^[0-9.]{1,20}$/));

  it('accepts exactly what ipaddr.js isValidFourPartDecimal accepts', () => {
    fc.assert(
      fc.property(texts, (text) => isFourPartDecimal(text) === ipaddr.IPv4.isValidFourPartDecimal(text)),
      { numRuns: 20_000 },
    );
  });
  it.each([
    ['203.0.113.7', true],
    ['0.0.0.0', true],
    ['255.255.255.255', true],
    ['010.0.0.1', false],
    ['1.2.3', false],
    ['1.2.3.256', false],
    [' 1.2.3.4', false],
    ['1.2.3.4\0x', false],
    ['1.2.3.4\n', false],
    ['1.2.3.4.', false],
    ['١.٢.٣.٤', false],
  ])('%s: %s', (text, ok) => {
    expect(isFourPartDecimal(text)).toBe(ok);
    expect(ipaddr.IPv4.isValidFourPartDecimal(text)).toBe(ok);
  });
});

describe('isRange', () => {
  // Validation's quick answer for a config's origin_ips: always parseRange's answer.
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 300 }).map(String),
    fc.constantFrom('00', '010', '0x7f', ''),
  );
  const v4 = fc.array(octet, { minLength: 3, maxLength: 5 }).map((parts) => parts.join('.'));
  const v6 = fc.constantFrom('::1', '2001:db8::', '::ffff:10.0.0.0', 'fe80::1%eth0', '::10.0.0.0', '1::2::3');
  const bits = fc.oneof(fc.integer({ min: 0, max: 130 }).map(String), fc.constantFrom('', '08', '-1', 'x'));
  const texts = fc.oneof(
    v4,
    v6,
    fc.tuple(fc.oneof(v4, v6), bits).map(([a, b]) => `${a}/${b}`),
    fc
      .tuple(fc.constantFrom(' ', '\t', '\n', ''), v4, fc.constantFrom(' ', '\n', '', '/'))
      .map((p) => p.join('')),
    fc.string(),
  );

  it('accepts exactly what parseRange accepts', () => {
    fc.assert(
      fc.property(texts, (text) => isRange(text) === (typeof parseRange(text) !== 'string')),
      { numRuns: 20_000 },
    );
  });
  it.each([
    ['203.0.113.7', true],
    [' 203.0.113.7\n', true],
    ['203.0.113.0/24', true],
    ['203.0.113.1/24', false],
    ['203.0.113', false],
    ['010.0.0.1', false],
    ['2001:db8::/32', true],
    ['::10.0.0.0', false],
  ])('%s: %s', (text, ok) => {
    expect(isRange(text)).toBe(ok);
    expect(typeof parseRange(text) !== 'string').toBe(ok);
  });
});

describe('isIPv4Mapped', () => {
  // Words near the edges of ::ffff:0:0/96 and of the special ranges ipaddr.js checks before it.
  const word = fc.oneof(
    fc.constantFrom(0, 1, 0xffff, 0xfffe, 0xfe80, 0xff00, 0xfc00, 0x64, 0xff9b, 0x2001, 0x2002),
    fc.integer({ min: 0, max: 0xffff }),
  );
  const address = fc.oneof(
    fc.array(word, { minLength: 8, maxLength: 8 }),
    fc.tuple(word, word).map(([a, b]) => [0, 0, 0, 0, 0, 0xffff, a, b]),
    fc.tuple(word, word, word).map(([x, a, b]) => [0, 0, 0, 0, x, 0xffff, a, b]),
  );

  it('answers what ipaddr.js isIPv4MappedAddress answers', () => {
    fc.assert(
      fc.property(address, (parts) => {
        const addr = new ipaddr.IPv6(parts);
        return isIPv4Mapped(addr) === addr.isIPv4MappedAddress();
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('parseRange', () => {
  it('reads single addresses and CIDRs', () => {
    expect(parseRange('203.0.113.7')).toHaveLength(2);
    expect(parseRange('198.51.100.0/24')).toHaveLength(2);
    expect(parseRange('2001:db8::/32')).toHaveLength(2);
  });
  it.each(['10.0.0.0/33', '10.0.0.1/8', 'nope', '1.2.3.4/', '2001:db8::/129', '300.1.1.1'])(
    'refuses %s',
    (bad) => {
      expect(typeof parseRange(bad)).toBe('string');
    },
  );

  /** A CIDR as ipaddr.js reads it (trimmed, as parseRange reads it), with its masks. */
  const viaIpaddr = (text: string): string => {
    let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
    try {
      parsed = ipaddr.parseCIDR(text.trim());
    } catch {
      return 'invalid';
    }
    let [a, bits] = parsed;
    if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      a = (a as ipaddr.IPv6).toIPv4Address();
      bits -= 96;
    }
    const family = a.kind() === 'ipv4' ? ipaddr.IPv4 : ipaddr.IPv6;
    const network = family.networkAddressFromCIDR(`${a.toString()}/${bits}`);
    return network.toString() === a.toString() ? `${a.toString()}/${bits}` : 'host bits';
  };
  const viaParseRange = (text: string): string => {
    const r = parseRange(text);
    if (typeof r !== 'string') return `${r[0].toString()}/${r[1]}`;
    return r.includes('host bits') ? 'host bits' : 'invalid';
  };
  const lengths = fc.oneof(
    fc.integer({ min: 0, max: 140 }).map(String),
    fc.constantFrom('08', '024', '+8', '-0', '8/8', '', ' 8', '8 ', '1e1', '0x10', '\u0663', '99999999999'),
  );

  it('reads address/bits as ipaddr.js does, for every address parseAddress accepts', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), lengths, (address, length) => {
        fc.pre(parseAddress(address) !== null);
        expect(viaParseRange(`${address}/${length}`)).toBe(viaIpaddr(`${address}/${length}`));
      }),
      { numRuns: 5000 },
    );
  });
});

describe('IpMatcher', () => {
  it('matches CIDR edges exactly', () => {
    const m = matcher('198.51.100.0/24');
    expect(m.matches(addr('198.51.100.0'))).toBe(true);
    expect(m.matches(addr('198.51.100.255'))).toBe(true);
    expect(m.matches(addr('198.51.99.255'))).toBe(false);
    expect(m.matches(addr('198.51.101.0'))).toBe(false);
  });
  it('matches single addresses, in both IPv4 spellings', () => {
    const m = matcher('203.0.113.7');
    expect(m.matches(addr('203.0.113.7'))).toBe(true);
    expect(m.matches(addr('::ffff:203.0.113.7'))).toBe(true);
    expect(m.matches(addr('203.0.113.8'))).toBe(false);
  });
  it('matches IPv6, whatever the spelling', () => {
    const m = matcher('2001:db8::/32', '2001:db9::1');
    expect(m.matches(addr('2001:db8:ffff::1'))).toBe(true);
    expect(m.matches(addr('2001:0db9:0000::0001'))).toBe(true);
    expect(m.matches(addr('2001:dba::1'))).toBe(false);
  });
  it('keeps the families apart', () => {
    const m = matcher('0.0.0.0/0');
    expect(m.matches(addr('10.1.2.3'))).toBe(true);
    expect(m.matches(addr('2001:db8::1'))).toBe(false);
    expect(m.matches(addr('::ffff:10.1.2.3'))).toBe(true);
  });
  it('reads IPv4-mapped CIDRs as IPv4', () => {
    expect(matcher('::ffff:10.0.0.0/104').matches(addr('10.200.0.1'))).toBe(true);
  });
});
