import { describe, expect, it } from 'vitest';
import { checkOriginIp, createClientIpResolver } from '../../src/auth/client-ip.js';
import { createIpMatcher, parseRange, type Range } from '../../src/net/ip.js';
import { testKey } from '../helpers/key.js';

const matcher = (...ranges: string[]) => createIpMatcher(ranges.map((r) => parseRange(r) as Range));

describe('client address', () => {
  it('is the peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    const resolve = createClientIpResolver(matcher());
    expect(resolve('198.51.100.9', '203.0.113.7')?.toString()).toBe('198.51.100.9');
  });
  it('is the peer when the peer is not a trusted proxy (spoofed header)', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('198.51.100.9', '203.0.113.7')?.toString()).toBe('198.51.100.9');
  });
  it('is the right-most untrusted X-Forwarded-For entry behind a trusted proxy', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    // the client prepended a lie; the proxies appended the truth
    expect(resolve('10.0.0.2', '203.0.113.7, 198.51.100.9, 10.0.0.1')?.toString()).toBe('198.51.100.9');
    expect(resolve('::ffff:10.0.0.2', ['203.0.113.7', '198.51.100.9'])?.toString()).toBe('198.51.100.9');
  });
  it('is the one X-Forwarded-For entry behind a trusted proxy that saw one hop', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('10.0.0.2', '203.0.113.7')?.toString()).toBe('203.0.113.7');
    expect(resolve('10.0.0.2', ' 203.0.113.7 ')?.toString()).toBe('203.0.113.7');
  });
  it('is the peer behind a trusted proxy that sent no X-Forwarded-For', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('10.0.0.2', undefined)?.toString()).toBe('10.0.0.2');
  });
  it('is the left-most entry when every hop is trusted', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('10.0.0.2', '10.0.0.5, 10.0.0.1')?.toString()).toBe('10.0.0.5');
  });
  it('is unknown when the walk meets a malformed entry', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('10.0.0.2', '203.0.113.7, not-an-ip')).toBeNull();
  });
  it('is the peer behind a trusted proxy that sent an empty X-Forwarded-For', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('10.0.0.2', '')?.toString()).toBe('10.0.0.2');
    expect(resolve('10.0.0.2', ' ')?.toString()).toBe('10.0.0.2');
  });
  it('is unknown when the walk meets an empty entry in a longer chain', () => {
    const resolve = createClientIpResolver(matcher('10.0.0.0/8'));
    expect(resolve('10.0.0.2', '203.0.113.7, , 10.0.0.1')).toBeNull();
    expect(resolve('10.0.0.2', '203.0.113.7,')).toBeNull();
  });
  it('is unknown without a peer address (the socket already closed)', () => {
    expect(createClientIpResolver(matcher('10.0.0.0/8'))(undefined, '203.0.113.7')).toBeNull();
    expect(createClientIpResolver(matcher())(undefined, undefined)).toBeNull();
  });
  it('reads IPv4-mapped peers and IPv6 peers', () => {
    const resolve = createClientIpResolver(matcher());
    expect(resolve('::ffff:127.0.0.1', undefined)?.toString()).toBe('127.0.0.1');
    expect(resolve('::1', undefined)?.toString()).toBe('::1');
  });
});

describe('origin_ips', () => {
  const fenced = testKey({ origins: matcher('203.0.113.7', '198.51.100.0/24', '2001:db8::/32') });
  const resolve = createClientIpResolver(matcher());
  it('admits listed addresses and ranges', () => {
    for (const peer of ['203.0.113.7', '::ffff:203.0.113.7', '198.51.100.200', '2001:db8::42']) {
      expect(checkOriginIp(fenced, resolve(peer, undefined))).toBeNull();
    }
  });
  it('refuses every other address, and an unknown one', () => {
    for (const peer of ['203.0.113.8', '127.0.0.1', '2001:db9::1', '198.51.101.1']) {
      expect(checkOriginIp(fenced, resolve(peer, undefined))?.code).toBe('origin_not_allowed');
    }
    expect(checkOriginIp(fenced, null)?.code).toBe('origin_not_allowed');
  });
  it('does not apply to keys without origin_ips', () => {
    expect(checkOriginIp(testKey(), resolve('192.0.2.1', undefined))).toBeNull();
  });
});
