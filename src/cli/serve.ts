import cluster from 'node:cluster';
import { loadInThread } from '../config/thread.js';
import { configPathFrom, guarded, parseOptions } from './args.js';

/**
 * `leadgate serve`. The config is read, validated and its key table built in the loader thread,
 * started before anything else loads; this thread loads the gateway (serving.ts) meanwhile.
 * A worker of a pool (`workers` > 1) loads its own config, in place.
 */
export function runServe(args: string[]): Promise<number> {
  return guarded(async () => {
    const { config: option } = parseOptions(args, ['config'], [], 'serve');
    const path = configPathFrom(option);
    if (cluster.isWorker) return (await import('../workers/worker.js')).runWorker(path);
    const loading = loadInThread({ path, env: process.env, previousFiles: [], known: [] });
    return (await import('./serving.js')).serve(path, loading);
  });
}
