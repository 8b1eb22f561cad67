import { createRequire } from 'node:module';
import type { Pool as UndiciPool } from 'undici';

/**
 * undici's Pool, loaded alone: its index also loads fetch, WebSocket, the cache and the mock agent,
 * none of which leadgate uses (Pool alone loads in ~30 ms where the index takes ~75 ms, measured
 * on a start). The version is pinned in package.json; test/http/undici-pool.test.ts fails if
 * undici moves the file or the index exports another Pool.
 */
const require = createRequire(import.meta.url);

export const Pool: typeof UndiciPool = require('undici/lib/dispatcher/pool.js');
export type Pool = UndiciPool;
