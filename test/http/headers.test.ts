import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/pipeline.js';
import { downstreamHeaders, type HopFacts, upstreamHeaders } from '../../src/http/headers.js';
import { testKey } from '../helpers/key.js';

// The header rules as pure functions; test/http/security-core.test.ts tries the same rules on the wire.
const principal: Principal = {
  key: testKey({ name: 'server', access: 'READ', purpose: 'SERVER' }),
  path: '/api/v2/merchant/orders',
  query: '',
  lookupId: null,
  lead: null,
};
const hop = (facts: Partial<HopFacts> = {}): HopFacts => ({
  requestId: 'req-1',
  peer: '10.0.0.2',
  peerTrusted: false,
  encrypted: false,
  underscores: 'drop',
  ...facts,
});

describe('upstreamHeaders', () => {
  it('drops the headers named in Connection, whatever their case and spacing, but never framing', () => {
    const out = upstreamHeaders(
      {
        connection: 'X-Hop-A,  x-hop-b ,Content-Length, host',
        'x-hop-a': 'a',
        'x-hop-b': 'b',
        'x-kept': 'kept',
        'content-length': '5',
        host: 'example.test',
      },
      principal,
      hop(),
    );
    expect(out['x-hop-a']).toBeUndefined();
    expect(out['x-hop-b']).toBeUndefined();
    expect(out['x-kept']).toBe('kept');
    expect(out['content-length']).toBe('5');
    expect(out.host).toBe('example.test');
    expect(out.connection).toBeUndefined();
  });

  it.each([
    'x-forwarded-host',
    'x-forwarded-port',
    'proxy-authorization',
    'x-real-ip',
    'forwarded',
    'proxy-connection',
    'keep-alive',
    'te',
    'trailer',
    'upgrade',
    'expect',
    'x-apikey',
    'x-leadtoken',
    'x-leaddigest',
  ])('never passes a client %s on', (name) => {
    expect(upstreamHeaders({ [name]: 'client', 'x-kept': 'k' }, principal, hop())).not.toHaveProperty(name);
  });

  it('with underscore_headers: pass, passes other "_" names but no reserved or framing name so spelt', () => {
    const out = upstreamHeaders(
      { x_custom: 'kept', x_lead_id: 'evil', transfer_encoding: 'chunked', content_length: '1', host_: 'x' },
      principal,
      hop({ underscores: 'pass' }),
    );
    expect(out).toMatchObject({ x_custom: 'kept', host_: 'x' });
    for (const name of ['x_lead_id', 'transfer_encoding', 'content_length'])
      expect(out).not.toHaveProperty(name);
    expect(upstreamHeaders({ x_custom: 'k' }, principal, hop())).not.toHaveProperty('x_custom');
  });

  it('from a trusted proxy, extends X-Forwarded-For and keeps an http or https X-Forwarded-Proto', () => {
    const trusted = hop({ peerTrusted: true });
    const out = upstreamHeaders(
      { 'x-forwarded-for': '203.0.113.7, 198.51.100.9', 'x-forwarded-proto': 'https' },
      principal,
      trusted,
    );
    expect(out['x-forwarded-for']).toBe('203.0.113.7, 198.51.100.9, 10.0.0.2');
    expect(out['x-forwarded-proto']).toBe('https');
    expect(
      upstreamHeaders({ 'x-forwarded-for': ['203.0.113.7', '198.51.100.9'] }, principal, trusted)[
        'x-forwarded-for'
      ],
    ).toBe('203.0.113.7, 198.51.100.9, 10.0.0.2');
    expect(
      upstreamHeaders(
        { 'x-forwarded-proto': 'http' },
        principal,
        hop({ peerTrusted: true, encrypted: true }),
      ),
    ).toMatchObject({ 'x-forwarded-proto': 'http' });
    for (const proto of ['httpsx', 'xhttps', 'HTTPS', 'ftp', '', ['https'], ['https', 'https']]) {
      expect(upstreamHeaders({ 'x-forwarded-proto': proto }, principal, trusted)['x-forwarded-proto']).toBe(
        'http',
      );
    }
    expect(upstreamHeaders({}, principal, trusted)['x-forwarded-for']).toBe('10.0.0.2');
  });

  it('from anyone else, sends the peer and its own scheme, ignoring what the client said', () => {
    const spoofed = { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' };
    expect(upstreamHeaders(spoofed, principal, hop())).toMatchObject({
      'x-forwarded-for': '10.0.0.2',
      'x-forwarded-proto': 'http',
    });
    expect(
      upstreamHeaders({ 'x-forwarded-proto': 'http' }, principal, hop({ encrypted: true })),
    ).toMatchObject({
      'x-forwarded-proto': 'https',
    });
    expect(upstreamHeaders({}, principal, hop({ peer: undefined }))['x-forwarded-for']).toBe('');
  });

  it('sets the request id and the identity headers over anything the client sent', () => {
    const out = upstreamHeaders(
      { 'x-request-id': 'evil', 'x-lead-id': 'evil' },
      { ...principal, lead: { via: 'token', leadId: 'lead-1', exp: 1 } },
      hop(),
    );
    expect(out).toMatchObject({
      'x-request-id': 'req-1',
      'x-lead-id': 'lead-1',
      'x-api-key-name': 'server',
      'x-api-key-access': 'READ',
      'x-api-key-purpose': 'SERVER',
    });
    const none = upstreamHeaders(
      { 'x-api-key-purpose': 'evil', 'x-lead-id': 'evil' },
      { ...principal, key: testKey({ purpose: null }) },
      hop(),
    );
    expect(none).not.toHaveProperty('x-api-key-purpose');
    expect(none).not.toHaveProperty('x-lead-id');
  });
});

describe('downstreamHeaders', () => {
  it("drops the upstream's hop-by-hop headers and CORS grant, appends Vary, and sets the gateway's Connection", () => {
    const out = downstreamHeaders(
      {
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'proxy-connection': 'keep-alive',
        'access-control-allow-origin': '*',
        'access-control-allow-credentials': 'true',
        vary: 'Accept',
        'x-upstream': 'kept',
      },
      { vary: 'Origin', 'x-request-id': 'req-1' },
      'close',
    );
    expect(out).toEqual({
      vary: 'Accept, Origin',
      'x-request-id': 'req-1',
      'x-upstream': 'kept',
      connection: 'close',
    });
  });

  it("keeps the gateway's own CORS grant, sets Vary when the upstream sent none, and no Connection unless set", () => {
    const out = downstreamHeaders(
      { 'access-control-allow-credentials': 'true', 'access-control-allow-origin': '*' },
      { 'access-control-allow-origin': 'https://shop.example', vary: 'Origin' },
      undefined,
    );
    expect(out).toEqual({
      'access-control-allow-origin': 'https://shop.example',
      'access-control-allow-credentials': 'true',
      vary: 'Origin',
    });
  });
});
