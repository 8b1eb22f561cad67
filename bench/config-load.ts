import { loadConfig } from '../src/config/load.js';
import { writeSoakConfig } from './fixture.js';

/**
 * `node --expose-gc config-load.js N`: time to load a config with N keys of the soak shape, and heap
 * held per key.
 * Prints one JSON line.
 */
const keys = Number(process.argv[2] ?? 100_000);
const path = writeSoakConfig(keys);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
gc();
const before = process.memoryUsage().heapUsed;
const t0 = process.hrtime.bigint();
const config = loadConfig(path, { env: {} });
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
gc();
const after = process.memoryUsage().heapUsed;
process.stdout.write(
  `${JSON.stringify({ keys: config.keys.size, load_ms: Math.round(ms), heap_bytes_per_key: Math.round((after - before) / config.keys.size) })}\n`,
);
