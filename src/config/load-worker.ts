import { parentPort, workerData } from 'node:worker_threads';
import { buildKeys, ConfigError, fingerprint, validateConfig } from './load.js';
import type { LoadOutcome, LoadRequest } from './thread.js';

/**
 * The loader thread (started by `loadInThread`): fingerprint, parse and validate a config and build
 * its key table away from the event loop, then hand it all over in one message: `unchanged`,
 * `failed`, or `config` with the table's state (typed arrays and a few long strings: the main
 * thread takes it over in milliseconds, where building 100,000 keys there took ~100 ms).
 */
const request = workerData as LoadRequest;
const port = parentPort;
if (port !== null) {
  const send = (outcome: LoadOutcome) => port.postMessage(outcome);
  const before = fingerprint(request.previousFiles);
  if (request.known.includes(before)) {
    send({ kind: 'unchanged' });
  } else {
    try {
      const { keys, ...config } = validateConfig(request.path, { env: request.env });
      send({ kind: 'config', config, keys: buildKeys(keys).state() });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      send({ kind: 'failed', fingerprint: before, problems: err.problems });
    }
  }
}
