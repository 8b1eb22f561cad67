import { createSecretKey } from 'node:crypto';
import { hashApiKey } from '../../src/auth/api-key.js';
import type { ApiKey } from '../../src/config/types.js';

/** A resolved key for unit tests of pure checks. */
export function testKey(overrides: Partial<ApiKey> = {}): ApiKey {
  const secret = createSecretKey(Buffer.from('secret-secret-secret'));
  return {
    name: 'k',
    sha256: hashApiKey('the-key-value-0001'),
    access: 'READ',
    purpose: 'SERVER',
    secret,
    kid: null,
    verifiers: [{ kid: null, key: overrides.secret ?? secret, verifyUntilS: null }],
    origins: null,
    corsOrigins: null,
    needsLead: false,
    expiresAtS: null,
    ...overrides,
  };
}
