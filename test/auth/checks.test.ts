import { describe, expect, it } from 'vitest';
import { checkAccess } from '../../src/auth/access.js';
import { createApiKeyCheck, hashApiKey } from '../../src/auth/api-key.js';
import { checkSource } from '../../src/auth/source.js';
import { KeyTable } from '../../src/config/key-table.js';
import { GatewayError } from '../../src/contract/errors.js';
import { testKey } from '../helpers/key.js';

describe('api key', () => {
  const table = new KeyTable();
  table.add({
    raw: {
      name: 'k',
      key: 'the-key-value-0001',
      access_type: 'READ',
      purpose: 'SERVER',
      signing_secret: 'secret-secret-secret',
    },
    sha256: hashApiKey('the-key-value-0001'),
    secret: 'secret-secret-secret',
    rotation: null,
    expiresAtS: null,
  });
  const check = createApiKeyCheck(table);
  it('finds a known key by its hash, built once and then kept', () => {
    const found = check('the-key-value-0001');
    expect(found).toMatchObject({
      name: 'k',
      access: 'READ',
      purpose: 'SERVER',
      sha256: hashApiKey('the-key-value-0001'),
    });
    expect(check('the-key-value-0001')).toBe(found);
    expect(table.get(hashApiKey('the-key-value-0001'))).toBe(found);
  });
  it.each([
    [undefined, 'missing_api_key'],
    ['', 'missing_api_key'],
    ['the-key-value-0002', 'invalid_api_key'],
    ['THE-KEY-VALUE-0001', 'invalid_api_key'],
    [['the-key-value-0001', 'the-key-value-0001'], 'invalid_api_key'],
  ])('refuses %j with %s', (header, code) => {
    const r = check(header);
    expect(r).toBeInstanceOf(GatewayError);
    expect((r as GatewayError).code).toBe(code);
    expect((r as GatewayError).detail).not.toContain('the-key-value');
  });
});

describe('source', () => {
  it('accepts web and mobile', () => {
    expect(checkSource('web')).toBeNull();
    expect(checkSource('mobile')).toBeNull();
  });
  it.each([
    [undefined, 'missing_source'],
    ['', 'missing_source'],
    ['desktop', 'invalid_source'],
    ['WEB', 'invalid_source'],
    [['web', 'web'], 'invalid_source'],
  ])('refuses %j with %s', (header, code) => {
    expect(checkSource(header)?.code).toBe(code);
  });
});

describe('access', () => {
  it('lets READ keys read only (a plain OPTIONS too is refused; preflights never get here)', () => {
    const read = testKey({ access: 'READ' });
    for (const m of ['GET', 'HEAD']) expect(checkAccess(read, m)).toBeNull();
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'])
      expect(checkAccess(read, m)?.code).toBe('method_not_allowed');
  });
  it('lets WRITE keys use any method', () => {
    const write = testKey({ access: 'WRITE', purpose: null });
    for (const m of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) expect(checkAccess(write, m)).toBeNull();
  });
  it('applies to every method an override names (CONTRACT §10)', () => {
    const read = testKey({ access: 'READ' });
    expect(checkAccess(read, 'GET', ['HEAD', 'GET'])).toBeNull();
    expect(checkAccess(read, 'GET', ['GET', 'DELETE'])?.code).toBe('method_not_allowed');
    expect(checkAccess(read, 'HEAD', ['PUT'])?.code).toBe('method_not_allowed');
    const write = testKey({ access: 'WRITE', purpose: null });
    expect(checkAccess(write, 'GET', ['DELETE'])).toBeNull();
  });
});
