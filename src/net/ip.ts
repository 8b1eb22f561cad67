import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Parses an address the way leadgate compares them: IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes
 * its IPv4 form, an IPv6 zone (`%eth0`) is dropped (one address, one spelling: one rate-limit
 * bucket). Returns null for anything that is not an address, and for spellings ipaddr.js would
 * read loosely: a dotted IPv4 inside IPv6 must be four plain decimals too (not `::ffff:127.000.0.1`
 * or `::ffff:0x7f.0.0.1`), and the deprecated IPv4-compatible `::1.2.3.4`, which ipaddr.js reads as
 * IPv4-mapped, is refused (RFC 4291 §2.5.5.1: it is not the IPv4 address).
 */
export function parseAddress(text: string): Address | null {
  const trimmed = text.trim();
  // One parse, where ipaddr.process would try each family's parser in turn (a config loads many);
  // a text from X-Forwarded-For that ipaddr.js refuses is null, never an exception.
  try {
    // Four dotted decimals only: no `1.2.3`, `0x7f.1` or other legacy IPv4 shorthands.
    if (!trimmed.includes(':')) return isFourPartDecimal(trimmed) ? ipaddr.IPv4.parse(trimmed) : null;
    if (trimmed.includes('.') && !isStrictTransitional(trimmed)) return null;
    const parsed = ipaddr.IPv6.parse(trimmed);
    const v6 = parsed.zoneId === undefined ? parsed : new ipaddr.IPv6(parsed.parts);
    return isIPv4Mapped(v6) ? v6.toIPv4Address() : v6;
  } catch {
    return null;
  }
}

/** `…:a.b.c.d` (zone aside) with four plain decimals, and not the deprecated `::a.b.c.d`. */
function isStrictTransitional(text: string): boolean {
  const zone = text.indexOf('%');
  const address = zone === -1 ? text : text.slice(0, zone);
  const colon = address.lastIndexOf(':');
  return isFourPartDecimal(address.slice(colon + 1)) && colon !== 1;
}

/**
 * Four dotted decimals, each 0-255 without a leading zero: the set ipaddr.js's
 * `isValidFourPartDecimal` accepts (a test holds the two together), by Node's own check, one
 * pass where ipaddr.js parses twice (a config with 100,000 keys checks as many).
 */
export const isFourPartDecimal = (text: string): boolean => isIPv4(text);

const IPV4_MAPPED = ipaddr.IPv6.parseCIDR('::ffff:0:0/96');

/**
 * In `::ffff:0:0/96`: what ipaddr.js's `isIPv4MappedAddress` answers (a test holds the two
 * together), by one range match where it matches the address against every special range in turn.
 */
export const isIPv4Mapped = (addr: ipaddr.IPv6): boolean => addr.match(IPV4_MAPPED);

/** Canonical text of an address, used as a set key: one spelling per address. */
export function addressKey(addr: Address): string {
  return addr.kind() === 'ipv6' ? (addr as ipaddr.IPv6).toNormalizedString() : addr.toString();
}

export type Range = readonly [Address, number];

/**
 * Parses `203.0.113.7`, `198.51.100.0/24`, `2001:db8::/32` or `::ffff:10.0.0.0/104`.
 * A CIDR whose host bits are set (`10.0.0.1/8`) is refused: it is almost always a typo.
 */
export function parseRange(text: string): Range | string {
  const trimmed = text.trim();
  if (!trimmed.includes('/')) {
    const addr = parseAddress(trimmed);
    if (!addr) return `"${trimmed}" is not an IP address`;
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  }
  const cidr = parseCidr(trimmed);
  if (cidr === null) return `"${trimmed}" is not a CIDR range`;
  let [addr, bits] = cidr;
  if (addr.kind() === 'ipv6' && isIPv4Mapped(addr as ipaddr.IPv6) && bits >= 96) {
    addr = (addr as ipaddr.IPv6).toIPv4Address();
    bits -= 96;
  }
  if (hasHostBits(addr, bits)) {
    const network =
      addr.kind() === 'ipv4'
        ? ipaddr.IPv4.networkAddressFromCIDR(`${addr.toString()}/${bits}`)
        : ipaddr.IPv6.networkAddressFromCIDR(`${addr.toString()}/${bits}`);
    return `"${trimmed}" has host bits set (did you mean ${addressKey(network)}/${bits}?)`;
  }
  return [addr, bits];
}

/**
 * `address/bits` of one family, the address as strict as {@link parseAddress}; null if it is not.
 * Read as ipaddr.js's `parseCIDR` reads it (a test holds the two together): digits after the one
 * `/`, 0-32 or 0-128. Its regular expression and the property it defines on every result cost
 * ~1 µs a range, a tenth of a second for a config with 100,000 keys.
 */
function parseCidr(text: string): [Address, number] | null {
  const slash = text.indexOf('/');
  const prefix = text.slice(0, slash);
  const length = text.slice(slash + 1);
  if (!DIGITS.test(length)) return null;
  const bits = Number.parseInt(length, 10);
  const v6 = prefix.includes(':');
  if (bits > (v6 ? 128 : 32)) return null;
  if (v6 ? prefix.includes('.') && !isStrictTransitional(prefix) : !isFourPartDecimal(prefix)) return null;
  try {
    return [v6 ? ipaddr.IPv6.parse(prefix) : ipaddr.IPv4.parse(prefix), bits];
  } catch {
    return null;
  }
}

const DIGITS = /^[0-9]+$/;

/** True when `addr` has a bit set past the first `bits` (`10.0.0.1/8`): its words, masked. */
function hasHostBits(addr: Address, bits: number): boolean {
  const v4 = addr.kind() === 'ipv4';
  const words = v4 ? (addr as ipaddr.IPv4).octets : (addr as ipaddr.IPv6).parts;
  const width = v4 ? 8 : 16;
  for (let i = 0; i < words.length; i++) {
    const kept = Math.min(Math.max(bits - i * width, 0), width);
    if (((words[i] as number) & ((1 << (width - kept)) - 1)) !== 0) return true;
  }
  return false;
}

/**
 * True exactly when {@link parseRange} accepts `text` (a test holds the two together). A plain
 * IPv4 address, the common `origin_ips` entry, is answered by Node's check alone: a config with
 * 100,000 keys validates its addresses without building an ipaddr.js object for each.
 */
export function isRange(text: string): boolean {
  const trimmed = text.trim();
  if (!trimmed.includes('/') && !trimmed.includes(':')) return isFourPartDecimal(trimmed);
  return typeof parseRange(trimmed) !== 'string';
}

/** A range validation already accepted (the config schema checks each one). */
export function checkedRange(text: string): Range {
  const range = parseRange(text);
  if (typeof range === 'string') throw new Error('an unchecked IP range reached the build');
  return range;
}

export interface IpMatcher {
  readonly size: number;
  matches(addr: Address): boolean;
}

/**
 * Compiles a list of ranges once: single addresses go into a set (O(1) whatever the list's
 * length), real ranges are scanned, grouped by address family.
 */
export function createIpMatcher(ranges: readonly Range[]): IpMatcher {
  const exact = new Set<string>();
  const v4: Array<[ipaddr.IPv4, number]> = [];
  const v6: Array<[ipaddr.IPv6, number]> = [];
  for (const [addr, bits] of ranges) {
    const full = addr.kind() === 'ipv4' ? 32 : 128;
    if (bits === full) exact.add(addressKey(addr));
    else if (addr.kind() === 'ipv4') v4.push([addr as ipaddr.IPv4, bits]);
    else v6.push([addr as ipaddr.IPv6, bits]);
  }
  return {
    size: ranges.length,
    matches(addr: Address): boolean {
      if (exact.has(addressKey(addr))) return true;
      if (addr.kind() === 'ipv4') {
        const a = addr as ipaddr.IPv4;
        for (const range of v4) if (a.match(range)) return true;
      } else {
        const a = addr as ipaddr.IPv6;
        for (const range of v6) if (a.match(range)) return true;
      }
      return false;
    },
  };
}
