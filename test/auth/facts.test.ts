import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { RequestFacts } from '../../src/auth/facts.js';
import { createIpMatcher, type IpMatcher, parseRange, type Range } from '../../src/net/ip.js';

const matcher = (...ranges: string[]) => createIpMatcher(ranges.map((r) => parseRange(r) as Range));

/** Headers whose X-Forwarded-For counts its reads; and a matcher that counts its calls. */
function counted(forwardedFor: string, trusted: IpMatcher) {
  const reads = { header: 0, matches: 0 };
  const headers: IncomingHttpHeaders = {};
  Object.defineProperty(headers, 'x-forwarded-for', {
    enumerable: true,
    get() {
      reads.header++;
      return forwardedFor;
    },
  });
  const spy: IpMatcher = {
    size: trusted.size,
    matches(a) {
      reads.matches++;
      return trusted.matches(a);
    },
  };
  return { headers, spy, reads };
}

describe('RequestFacts', () => {
  it('works the client address out on its first read only, and every later read gets that one', () => {
    const { headers, spy, reads } = counted('203.0.113.7, 198.51.100.9', matcher('10.0.0.0/8'));
    const facts = new RequestFacts('GET', '/', headers, '10.0.0.2', 0, spy);
    expect(reads).toEqual({ header: 0, matches: 0 }); // nothing worked out in advance
    const first = facts.clientAddress();
    expect(first?.toString()).toBe('198.51.100.9');
    const after = { ...reads };
    expect(facts.clientAddress()).toBe(first);
    expect(facts.clientAddress()).toBe(first);
    expect(reads).toEqual(after);
  });

  it('keeps an unknown client address (a malformed hop) as unknown, worked out once', () => {
    const { headers, spy, reads } = counted('not-an-address', matcher('10.0.0.0/8'));
    const facts = new RequestFacts('GET', '/', headers, '10.0.0.2', 0, spy);
    expect(facts.clientAddress()).toBeNull();
    const after = { ...reads };
    expect(facts.clientAddress()).toBeNull();
    expect(reads).toEqual(after);
  });

  it('tells whether the peer is a trusted proxy (IPv4-mapped peers included)', () => {
    const trusted = matcher('10.0.0.0/8');
    expect(new RequestFacts('GET', '/', {}, '::ffff:10.0.0.2', 0, trusted).peerTrusted()).toBe(true);
    expect(new RequestFacts('GET', '/', {}, '198.51.100.9', 0, trusted).peerTrusted()).toBe(false);
    expect(new RequestFacts('GET', '/', {}, undefined, 0, trusted).peerTrusted()).toBe(false);
    expect(new RequestFacts('GET', '/', {}, '10.0.0.2', 0, matcher()).peerTrusted()).toBe(false);
  });
});
