import { describe, expect, it } from 'vitest';
import { normalise, routePath } from '../../src/auth/path.js';
import { GatewayError } from '../../src/contract/errors.js';

const codeOf = (url: string) => {
  const r = routePath(url);
  return r instanceof GatewayError ? r.code : 'ok';
};

describe('routePath', () => {
  it.each([
    '/api/v2/merchant/orders',
    '/api/v2/merchant/orders?page=2',
    '/api/v2/merchant/leads/abc',
    '/api/v2/merchant/vip-tiers/gold/members',
    '/api/v2/merchant/orders/a%20b',
    '/api/v2/merchant/orders/a.b',
    '/api/v2/merchant/orders/..hidden',
  ])('accepts canonical %s', (url) => {
    expect(codeOf(url)).toBe('ok');
  });

  it.each([
    ['dot-dot segment', '/api/v2/merchant/../merchant/orders'],
    ['dot-dot out of the prefix', '/api/v2/merchant/orders/../../admin'],
    ['dot segment', '/api/v2/merchant/./orders'],
    ['trailing dot-dot', '/api/v2/merchant/orders/..'],
    ['encoded dots', '/api/v2/merchant/%2e%2e/merchant/orders'],
    ['encoded dots, upper case', '/api/v2/merchant/%2E%2E/orders'],
    ['encoded slash', '/api/v2/merchant/orders%2f1'],
    ['encoded slash in the prefix', '/api%2fv2/merchant/orders'],
    ['double slash', '/api/v2/merchant//orders'],
    ['double slash in the prefix', '//api/v2/merchant/orders'],
    ['backslash', '/api/v2/merchant\\orders'],
    ['backslash in the prefix', '/api\\v2\\merchant\\orders'],
    ['encoded backslash', '/api/v2/merchant/%5corders'],
    ['upper case', '/API/v2/merchant/orders'],
    ['mixed case', '/api/V2/Merchant/orders'],
    ['percent-encoded letters', '/%61pi/v2/merchant/orders'],
    ['dot segments reaching the prefix', '/public/../api/v2/merchant/orders'],
    ['encoded NUL', '/api/v2/merchant/orders%00'],
    ['double-encoded dots', '/api/v2/merchant/%252e%252e/x'],
    // decoded and parsed again, `?` ends the path: leads/lead-0001 is the lookup route
    ['an encoded question mark', '/api/v2/merchant/leads/lead-0001%3f/x'],
    ['an encoded question mark, upper case', '/api/v2/merchant/leads/lead-0001%3F/x'],
    ['an encoded hash', '/api/v2/merchant/leads/lead-0001%23/x'],
  ])('refuses %s with bad_path', (_name, url) => {
    expect(codeOf(url)).toBe('bad_path');
  });

  it.each(['/', '/healthz', '/api/v1/merchant/orders', '/api/v2/other', '/public/../x', '/api/v2/merchant'])(
    'answers %s with not_found',
    (url) => {
      expect(codeOf(url)).toBe('not_found');
    },
  );

  it('recognises the lead lookup and decodes its id', () => {
    const r = routePath('/api/v2/merchant/leads/a%20b?customer_id=x');
    expect(r).toMatchObject({
      lookupId: 'a b',
      query: 'customer_id=x',
      path: '/api/v2/merchant/leads/a%20b',
    });
    expect(routePath('/api/v2/merchant/leads/a/orders')).toMatchObject({ lookupId: null });
    expect(routePath('/api/v2/merchant/leads')).toMatchObject({ lookupId: null });
  });

  it.each([
    ['empty id', '/api/v2/merchant/leads/'],
    ['trailing slash', '/api/v2/merchant/leads/lead-2/'],
    ['upper case', '/api/v2/merchant/LEADS/x'],
    ['encoded letter', '/api/v2/merchant/l%65ads/x'],
    ['malformed escape', '/api/v2/merchant/leads/%ZZ'],
    ['path parameter', '/api/v2/merchant/leads;v=1/x'],
    ['encoded ";"', '/api/v2/merchant/leads/x%3Bv=1'],
    ['overlong UTF-8', '/api/v2/merchant/leads/%c0%ae'],
    ['fragment', '/api/v2/merchant/leads/x#y'],
    ['non-ASCII byte', '/api/v2/merchant/leads/\u00e9'],
    ['encoded tilde', '/api/v2/merchant/leads/%7Ex'],
  ])('refuses every other spelling of the lookup route: %s', (_name, url) => {
    expect(codeOf(url)).toBe('bad_path');
  });

  // The escape check must not end the checks: an allowed escape (%20) next to `..`, `//` or `./`.
  it.each([
    ['an escape with dot segments', '/api/v2/merchant/orders/../../../admin%20x'],
    ['an escape with a repeated slash', '/api/v2/merchant/orders//admin%20x'],
    ['an escape with a dot segment', '/api/v2/merchant/orders/./a%20b'],
    ['a backslash after the prefix', '/api/v2/merchant/orders\\x'],
    ['a backslash after the prefix, with an escape', '/api/v2/merchant/orders%20a\\..\\x'],
    ['a ";" after the prefix', '/api/v2/merchant/orders;jsessionid=1'],
    ['a non-ASCII byte after the prefix', '/api/v2/merchant/orders/\u00e9'],
    ['a control character after the prefix', '/api/v2/merchant/orders/a\u0001'],
    ['a space after the prefix', '/api/v2/merchant/orders/a b'],
    ['an escape that is not UTF-8', '/api/v2/merchant/orders/%ff'],
    ['a lone percent sign', '/api/v2/merchant/orders/100%'],
    ['a percent sign and one digit', '/api/v2/merchant/orders/%2'],
  ])('refuses %s with bad_path', (_name, url) => {
    expect(codeOf(url)).toBe('bad_path');
  });

  it.each([
    ['path parameters out of the prefix', '/api/v2/merchant/..;/..;/internal/admin'],
    ['backslash dot segments', '/api/v2/merchant\\..\\admin'],
    ['path parameter in the prefix', '/api;x=1/v2/merchant/orders'],
  ])('refuses %s with bad_path', (_name, url) => {
    expect(codeOf(url)).toBe('bad_path');
  });

  it('answers what is forwarded: the path as received, the query without "?" or "" when none', () => {
    expect(routePath('/api/v2/merchant/orders')).toEqual({
      path: '/api/v2/merchant/orders',
      query: '',
      lookupId: null,
    });
    expect(routePath('/api/v2/merchant/orders?a=1&b')).toEqual({
      path: '/api/v2/merchant/orders',
      query: 'a=1&b',
      lookupId: null,
    });
    expect(routePath('/api/v2/merchant/leads/x?')).toEqual({
      path: '/api/v2/merchant/leads/x',
      query: '',
      lookupId: 'x',
    });
  });

  // Lookalikes are judged after up to three rounds of percent-decoding, more than any server does.
  it('sees a lookalike through three rounds of percent-encoding, not four', () => {
    expect(codeOf('/%252561pi/v2/merchant/orders')).toBe('bad_path');
    expect(codeOf('/%25252561pi/v2/merchant/orders')).toBe('not_found');
  });

  // A server that merges slashes and passes dot segments on reads these as under the prefix.
  it.each([
    '/api//v2/merchant/..',
    '/api/v2//merchant/..',
    '//api/v2/merchant/x/../..',
    '/api//v2/merchant%2f..',
  ])('refuses %s, under the prefix once its slashes are merged, with bad_path', (url) => {
    expect(codeOf(url)).toBe('bad_path');
  });

  // `/x/..` and a trailing `/` keep the slash a server would keep: `/api/v2/merchant/` is the prefix.
  it.each(['/api/v2/x/../merchant/', '/api/v2/x/../merchant/y/..', '/api/v2/x/../merchant/y/.'])(
    'refuses %s, which resolves to the prefix itself, with bad_path',
    (url) => {
      expect(codeOf(url)).toBe('bad_path');
    },
  );

  it('keeps ids with encoded reserved characters and UTF-8', () => {
    expect(routePath('/api/v2/merchant/leads/gid%3A7%20%C3%BC')).toMatchObject({ lookupId: 'gid:7 ü' });
  });
});

describe('normalise', () => {
  it('folds what lenient servers fold', () => {
    expect(normalise('/A//b/./c/../d%2F\\e')).toBe('/a/b/d/e');
    expect(normalise('/a/b/../')).toBe('/a/');
    expect(normalise('/a/b/..')).toBe('/a/');
  });

  it('keeps the root the root', () => {
    for (const path of ['/', '//', '/.', '/..', '/a/..', '/a/../..']) expect(normalise(path)).toBe('/');
  });
});
