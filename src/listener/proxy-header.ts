import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The PROXY protocol header (HAProxy's proxy-protocol.txt, v1 text and v2 binary), read from the
 * first bytes of a connection. Pure: bytes in, a verdict out. Never throws.
 */
export type ProxyHeader =
  /** The bytes are not (a prefix of) a PROXY header: a plain connection. */
  | { readonly kind: 'none' }
  /** A prefix of a header: read more. */
  | { readonly kind: 'more' }
  | { readonly kind: 'malformed' }
  /** v2 LOCAL, v1 UNKNOWN, or a family with no IP source (UNSPEC, unix): the real peer stands. */
  | { readonly kind: 'local'; readonly length: number }
  | {
      readonly kind: 'proxy';
      readonly length: number;
      readonly address: string;
      readonly port: number;
      readonly family: 'IPv4' | 'IPv6';
    };

const V1 = Buffer.from('PROXY ', 'latin1');
const V2 = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** v1: the longest line, CRLF included (proxy-protocol.txt §2.1). */
export const V1_MAX = 107;
/** v2: the 16 fixed bytes. */
const V2_FIXED = 16;

const NONE: ProxyHeader = { kind: 'none' };
const MORE: ProxyHeader = { kind: 'more' };
const MALFORMED: ProxyHeader = { kind: 'malformed' };

/** True when `buf` starts with `sig`, or is shorter and a prefix of it. */
function startsLike(buf: Buffer, sig: Buffer): boolean {
  const n = Math.min(buf.length, sig.length);
  return buf.subarray(0, n).equals(sig.subarray(0, n));
}

export function parseProxyHeader(buf: Buffer): ProxyHeader {
  if (buf.length === 0) return MORE;
  if (startsLike(buf, V1)) return buf.length < V1.length ? MORE : parseV1(buf);
  if (startsLike(buf, V2)) return buf.length < V2_FIXED ? MORE : parseV2(buf);
  return NONE;
}

/**
 * The bytes start with a whole PROXY signature (`PROXY ` for v1, the 12-byte one for v2): a
 * header is coming, whatever follows. A peer not believed is refused here, without waiting.
 */
export function startsWithSignature(buf: Buffer): boolean {
  return (buf.length >= V1.length && startsLike(buf, V1)) || (buf.length >= V2.length && startsLike(buf, V2));
}

/**
 * CONTRACT §3: an IPv4-mapped IPv6 address counts as its IPv4 form, here as everywhere the
 * source is used (origin_ips, X-Forwarded-For, the rate limit by IP). Null for a zone id: a
 * source address names no interface.
 */
function sourceOf(text: string): { address: string; family: 'IPv4' | 'IPv6' } | null {
  if (text.includes('%')) return null;
  if (isIPv4(text)) return { address: text, family: 'IPv4' };
  if (!isIPv6(text)) return null;
  return fromIPv6(ipaddr.IPv6.parse(text));
}

function fromIPv6(addr: ipaddr.IPv6): { address: string; family: 'IPv4' | 'IPv6' } {
  if (addr.isIPv4MappedAddress()) return { address: addr.toIPv4Address().toString(), family: 'IPv4' };
  return { address: addr.toString(), family: 'IPv6' };
}

const PORT = /^(0|[1-9][0-9]{0,4})$/;

function parseV1(buf: Buffer): ProxyHeader {
  const end = buf.subarray(0, V1_MAX).indexOf('\r\n');
  if (end === -1) return buf.length >= V1_MAX ? MALFORMED : MORE;
  const line = buf.subarray(V1.length, end).toString('latin1');
  const length = end + 2;
  if (line === 'UNKNOWN' || line.startsWith('UNKNOWN ')) return { kind: 'local', length };
  const parts = line.split(' ');
  if (parts.length !== 5) return MALFORMED;
  const [proto, src, dst, sport, dport] = parts as [string, string, string, string, string];
  const ipOk = proto === 'TCP4' ? isIPv4 : proto === 'TCP6' ? isIPv6 : null;
  if (ipOk === null || !ipOk(src) || !ipOk(dst) || dst.includes('%')) return MALFORMED;
  const source = sourceOf(src);
  if (source === null) return MALFORMED;
  if (!PORT.test(sport) || !PORT.test(dport)) return MALFORMED;
  const port = Number(sport);
  if (port > 65535 || Number(dport) > 65535) return MALFORMED;
  return { kind: 'proxy', length, ...source, port };
}

function parseV2(buf: Buffer): ProxyHeader {
  const verCmd = buf[12] as number;
  const fam = buf[13] as number;
  const length = V2_FIXED + buf.readUInt16BE(14);
  if (verCmd >> 4 !== 2) return MALFORMED;
  const cmd = verCmd & 0x0f;
  if (cmd > 1) return MALFORMED;
  const family = fam >> 4;
  const transport = fam & 0x0f;
  if (family > 3 || transport > 2) return MALFORMED;
  const need = family === 1 ? 12 : family === 2 ? 36 : family === 3 ? 216 : 0;
  if (length - V2_FIXED < need) return MALFORMED;
  if (buf.length < length) return MORE;
  // LOCAL (health checks), UNSPEC and unix sockets: the connection's own addresses stand.
  if (cmd === 0 || family === 0 || family === 3) return { kind: 'local', length };
  if (family === 1) {
    const address = Array.from(buf.subarray(16, 20)).join('.');
    return { kind: 'proxy', length, address, port: buf.readUInt16BE(24), family: 'IPv4' };
  }
  const source = fromIPv6(new ipaddr.IPv6(Array.from(buf.subarray(16, 32))));
  return { kind: 'proxy', length, ...source, port: buf.readUInt16BE(48) };
}
