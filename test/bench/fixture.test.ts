import { describe, expect, it } from 'vitest';
import { writeBenchConfig } from '../../bench/fixture.js';
import { loadConfig } from '../../src/config/load.js';

/**
 * Every config a bench row or run writes is one leadgate loads: a bench target that does not start
 * is found here, not minutes into a run.
 */
describe('the bench configs', () => {
  const load = (o: Partial<Parameters<typeof writeBenchConfig>[0]>) =>
    loadConfig(writeBenchConfig({ upstreamPort: 1, engine: 'undici', ...o }), { env: {} });

  it.each([
    ['the token path', {}, 2],
    ['errors-only logging on http-proxy', { logRequests: 'errors', engine: 'http-proxy' } as const, 2],
    ['one policy for every key, in memory', { rateLimit: 'all' } as const, 2],
    [
      'one policy on Redis, which holds the revocations too',
      { rateLimit: 'all', redisPort: 6390 } as const,
      2,
    ],
    ['the revocation set on Redis', { redisPort: 6390 }, 2],
    ['tracing at 1 %', { tracing: { endpoint: 'http://127.0.0.1:4318/v1/traces', ratio: 0.01 } }, 2],
    ['1,000 origin_ips on the storefront key', { originIps: 1000 }, 2],
    ['100 keys of the soak shape', { extraKeys: 100, keyShape: 'soak' } as const, 102],
    ['100 plain keys', { extraKeys: 100 }, 102],
  ])('%s loads, with its keys', (_name, o, keys) => {
    expect(load(o).keys.size).toBe(keys);
  });

  it('adds the limited key for a policy that names it alone, and two workers when asked', () => {
    expect(load({ rateLimit: 'limited' }).keys.size).toBe(3);
    expect(load({ workers: 2 }).workers).toBe(2);
  });
});
