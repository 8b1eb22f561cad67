import { describe, expect, it } from 'vitest';
import { KeyTable } from '../../src/config/key-table.js';
import { buildKeys, validateConfig } from '../../src/config/load.js';
import { writeConfig } from '../helpers/fixture.js';

/** A config with a key of every shape: rotation, CORS, expiry, origins (empty too), key_sha256. */
const KEYS = `keys:
  - { name: plain, key: "sk_plain_0123456789abcdef", access_type: WRITE, signing_secret: "plain-secret-0123456789abcdef01" }
  - { name: rotating, key: "sk_rotating_0123456789abc", access_type: READ, purpose: SERVER, origin_ips: ["10.1.0.0/16", "2001:db8::1"], signing_secrets: [{ kid: "k2", secret: "rotating-secret-new-0123456789ab" }, { kid: "k1", secret: "rotating-secret-old-0123456789ab", verify_until: "2099-01-01T00:00:00Z" }] }
  - { name: shop, key: "sk_shop_0123456789abcdef0", access_type: READ, purpose: STOREFRONT, signing_secret: "shop-secret-0123456789abcdef012", cors_origins: ["https://shop.example"], expires_at: "2099-06-01T00:00:00Z" }
  - { name: fenced, key_sha256: "${'ab'.repeat(32)}", access_type: READ, purpose: SERVER, signing_secret: "fenced-secret-0123456789abcdef0", origin_ips: [] }
`;

describe('KeyTable', () => {
  it('carries over whole to a table made from its state (the loader thread hands it over so)', () => {
    const path = writeConfig({ upstream: 'http://127.0.0.1:1', keys: KEYS });
    const built = buildKeys(validateConfig(path, { env: {} }).keys);
    const copy = new KeyTable(structuredClone(built.state()));

    expect(copy.size).toBe(4);
    expect(copy.nameList()).toEqual(['plain', 'rotating', 'shop', 'fenced']);
    expect([...copy.expiries()]).toEqual([...built.expiries()]);
    expect([...copy.keyCorsOrigins()]).toEqual(['https://shop.example']);
    const plain = (table: KeyTable, value: string) => {
      const key = table.findByValue(value);
      if (key === undefined) return undefined;
      return {
        ...key,
        secret: key.secret.export().toString(),
        verifiers: key.verifiers.map((v) => ({ ...v, key: v.key.export().toString() })),
        origins: key.origins?.size ?? null,
      };
    };
    for (const value of [
      'sk_plain_0123456789abcdef',
      'sk_rotating_0123456789abc',
      'sk_shop_0123456789abcdef0',
    ]) {
      expect(plain(copy, value)).toEqual(plain(built, value));
      expect(plain(copy, value)?.name).toBeTypeOf('string');
    }
    expect(copy.get('ab'.repeat(32))?.name).toBe('fenced');
    expect(copy.get('ab'.repeat(32))?.origins?.size).toBe(0);
    expect(copy.findByValue('sk_nobody_0123456789abcd')).toBeUndefined();
    expect(plain(copy, 'sk_rotating_0123456789abc')?.verifiers.map((v) => v.kid)).toEqual(['k2', 'k1']);
  });
});
