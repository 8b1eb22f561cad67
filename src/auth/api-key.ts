import { createHash } from 'node:crypto';
import type { KeyTable } from '../config/key-table.js';
import type { ApiKey } from '../config/types.js';
import { GatewayError } from '../contract/errors.js';

/**
 * CONTRACT §3.2: `x-apikey` present and known. Keys are held only as sha256 hashes; the presented
 * key is hashed and looked up, so no comparison ever runs over the secret value itself.
 */
export function createApiKeyCheck(keys: KeyTable) {
  return function checkApiKey(header: string | string[] | undefined): ApiKey | GatewayError {
    if (header === undefined || header === '') {
      return new GatewayError('missing_api_key', 'the x-apikey header is required');
    }
    if (typeof header !== 'string') return new GatewayError('invalid_api_key', 'the API key is not valid');
    const key = keys.findByValue(header);
    return key ?? new GatewayError('invalid_api_key', 'the API key is not valid');
  };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}
