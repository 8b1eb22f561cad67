import { createRequire } from 'node:module';
import type { Pool as UndiciPool } from 'undici';

/**
 * undici's Pool, loaded alone: its index also loads fetch, WebSocket, the cache and the mock agent,
 * none of which leadgate uses (Pool alone loads in ~30 ms where the index takes ~75 ms, measured
 * on a start). package.json allows undici's current major (8), the lockfile fixes the release; test/http/undici-pool.test.ts fails if
 * undici moves the file or the index exports another Pool.
 */
const require = createRequire(import.meta.url);

/**
 * Loaded alone, a Pool lacks what the index adds to every dispatcher (`request`, `stream`,
 * `pipeline`, `connect`, `upgrade`): the type says so, so a call to one of them does not compile.
 */
export type Pool = Omit<UndiciPool, 'request' | 'stream' | 'pipeline' | 'connect' | 'upgrade'>;
export const Pool: new (
  ...args: ConstructorParameters<typeof UndiciPool>
) => Pool = require('undici/lib/dispatcher/pool.js');
