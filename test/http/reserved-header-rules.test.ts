import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { forwardAuthRefusal, headersToRemove, isReserved } from '../../src/http/reserved-headers.js';

// The rules of src/http/reserved-headers.ts as pure functions; test/http/reserved-headers.test.ts and
// test/http/forward-auth-headers.test.ts try them on the wire.

describe('isReserved: what never reaches the backend (CONTRACT §5, §10)', () => {
  const HOP_BY_HOP = [
    'connection',
    'keep-alive',
    'proxy-connection',
    'proxy-authorization',
    'te',
    'trailer',
    'upgrade',
    'expect',
  ];
  const NAMED = [
    'x-lead-id',
    'x.lead.id',
    'x-api-key-name',
    'x-api-key-access',
    'x-api-key-purpose',
    'x-request-id',
    'x-apikey',
    'x-leadtoken',
    'x~lead~digest',
    'x-forwarded-for',
    'x-forwarded-proto',
    'x-forwarded-host',
    'x-forwarded-port',
    'x-real-ip',
    'forwarded',
    '.forwarded',
  ];

  it.each(['drop', 'pass'] as const)(
    'drops hop-by-hop, identity, credential and forwarding headers (_ %s)',
    (u) => {
      for (const name of [...HOP_BY_HOP, ...NAMED]) expect([name, isReserved(name, u)]).toEqual([name, true]);
    },
  );

  it.each(['drop', 'pass'] as const)('passes ordinary headers and method overrides (_ %s)', (u) => {
    // Overrides are checked as methods (a READ key may name only GET or HEAD), then passed on.
    for (const name of [
      'accept',
      'x-custom',
      'x.custom',
      'x-http-method-override',
      'x-method-override',
      'te-x',
    ])
      expect([name, isReserved(name, u)]).toEqual([name, false]);
  });

  it('drops every "_" name by default; with pass, only hop-by-hop and framing names so spelt', () => {
    for (const name of ['x_custom', 'host_', 'content_length', 'x_http_method'])
      expect([name, isReserved(name, 'drop')]).toEqual([name, true]);
    for (const name of [
      'keep_alive',
      'proxy_authorization',
      'transfer_encoding',
      'content_length',
      'x_lead_id',
    ])
      expect([name, isReserved(name, 'pass')]).toEqual([name, true]);
    for (const name of ['x_custom', 'host_', 'x_http_method'])
      expect([name, isReserved(name, 'pass')]).toEqual([name, false]);
  });
});

describe('forwardAuthRefusal: a proxy call carrying client copies is a 400 (CONTRACT §10)', () => {
  it('accepts what proxies send: the exact credential names, x-request-id, the exact forwarding names', () => {
    expect(
      forwardAuthRefusal({
        'x-apikey': 'k',
        'x-leadtoken': 't',
        'x-leaddigest': 'd',
        'x-request-id': 'r',
        'x-forwarded-for': '203.0.113.7',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'shop.example',
        'x-forwarded-port': '443',
        'x-real-ip': '203.0.113.7',
        forwarded: 'for=203.0.113.7',
        'x-http-method-override': 'DELETE',
        x_http_method: 'PUT',
        connection: 'keep-alive, x-custom, x-forwarded-for',
        trailer: 'x-checksum',
        accept: '*/*',
      }),
    ).toBeNull();
    expect(forwardAuthRefusal({})).toBeNull();
  });

  it.each([
    ['an exact identity header', { 'x-lead-id': 'lead-1' }],
    ['an exact key header', { 'x-api-key-access': 'WRITE' }],
    ['an identity header in another spelling', { 'x.request.id': 'r' }],
    ['a credential in another spelling', { x_apikey: 'k' }],
    ['a token in another spelling', { 'x-lead-token': 't' }],
    ['a client-address header in another spelling', { x_forwarded_for: '203.0.113.7' }],
    ['a scheme header in another spelling', { 'x.forwarded.proto': 'https' }],
    ['Connection naming an identity header', { connection: 'close, X_Lead_Id' }],
    ['Connection naming a credential', { connection: 'x-apikey' }],
    ['Proxy-Connection naming a credential', { 'proxy-connection': 'keep-alive,x-leadtoken' }],
    ['Trailer naming an identity header', { trailer: 'x-api-key-name' }],
    // Node joins repeated Connection lines; the rule holds for a list too.
    [
      'Connection lines as a list',
      { connection: ['keep-alive', 'x-leaddigest'] } as unknown as IncomingHttpHeaders,
    ],
  ] as Array<[string, IncomingHttpHeaders]>)('refuses %s', (_name, headers) => {
    expect(forwardAuthRefusal(headers)).not.toBeNull();
  });
});

describe('headersToRemove: what Envoy removes on allow (x-envoy-auth-headers-to-remove)', () => {
  it('names the credentials and every identity header leadgate did not set, never x-request-id', () => {
    expect(headersToRemove({}).split(', ')).toEqual([
      'x-lead-id',
      'x-api-key-name',
      'x-api-key-access',
      'x-api-key-purpose',
      'x-apikey',
      'x-leadtoken',
      'x-leaddigest',
    ]);
    expect(
      headersToRemove({ 'x-api-key-name': 'server', 'x-api-key-access': 'READ', 'x-lead-id': 'l' }).split(
        ', ',
      ),
    ).toEqual(['x-api-key-purpose', 'x-apikey', 'x-leadtoken', 'x-leaddigest']);
  });
});
