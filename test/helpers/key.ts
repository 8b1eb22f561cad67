import { createSecretKey } from 'node:crypto';
import { hashApiKey } from '../../src/auth/api-key.js';
import type { ApiKey } from '../../src/config/types.js';

/** A resolved key for unit tests of pure checks. */
export function testKey(overrides: Partial<ApiKey> = {}): ApiKey {
  return {
    name: 'k',
    sha256: hashApiKey('the-key-value-0001'),
    access: 'READ',
    purpose: 'SERVER',
    secret: createSecretKey(Buffer.from('secret-secret-secret')),
    origins: null,
    corsOrigins: null,
    needsLead: false,
    expiresAtS: null,
    ...overrides,
  };
}
