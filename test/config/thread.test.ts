import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configFromThread, validateConfig } from '../../src/config/load.js';
import { type LoadOutcome, loadInThread } from '../../src/config/thread.js';
import { KEYS, writeConfig } from '../helpers/fixture.js';

/** The loader thread, the real one (its compiled script), as a reload starts it. */
const load = (path: string, known: string[] = [], previousFiles: string[] = []): Promise<LoadOutcome> => {
  const loading = loadInThread({ path, env: { UPSTREAM_PORT: '4321' }, previousFiles, known });
  if (loading === null) throw new Error('no compiled loader thread: run npm run build');
  return loading;
};

describe('loadInThread', () => {
  it('hands over a config whose keys answer as the config says', async () => {
    const path = writeConfig({ upstream: 'http://127.0.0.1:${UPSTREAM_PORT}' });
    const outcome = await load(path);
    if (outcome.kind !== 'config') throw new Error(`expected a config, got ${outcome.kind}`);
    const config = configFromThread(outcome);
    expect(config.upstream.url.port).toBe('4321');
    expect(config.keys.size).toBe(4);
    expect(config.keys.findByValue(KEYS.storefront.key)?.name).toBe('storefront');
    expect(config.keys.findByValue(KEYS.write.key)?.access).toBe('WRITE');
    expect(config.keys.findByValue(`${KEYS.write.key}x`)).toBeUndefined();
    expect(config.hash).toBe(validateConfig(path, { env: { UPSTREAM_PORT: '4321' } }).hash);
  });

  it('says what is wrong with a broken config, with file and line, and nothing of its secrets', async () => {
    const path = writeConfig({ upstream: 'http://127.0.0.1:1' });
    writeFileSync(path, `${readFileSync(path, 'utf8')}  - { name: bad, key: "short", access_type: READ }\n`);
    const outcome = await load(path);
    if (outcome.kind !== 'failed') throw new Error(`expected failed, got ${outcome.kind}`);
    expect(outcome.problems.length).toBeGreaterThan(0);
    expect(outcome.problems.every((p) => p.file === path && typeof p.line === 'number')).toBe(true);
    expect(JSON.stringify(outcome.problems)).not.toContain(KEYS.storefront.secret);
  });

  it('answers unchanged for the files of a known fingerprint, and loads them when it is not known', async () => {
    const path = writeConfig({ upstream: 'http://127.0.0.1:1' });
    const { hash, watchedFiles } = validateConfig(path, { env: {} });
    expect((await load(path, [hash], [...watchedFiles])).kind).toBe('unchanged');
    expect((await load(path, ['another'], [...watchedFiles])).kind).toBe('config');
  });

  it('reports a file it cannot read as a problem of the config', async () => {
    const outcome = await load('/nonexistent/leadgate.yaml');
    expect(outcome).toMatchObject({ kind: 'failed', problems: [{ file: '/nonexistent/leadgate.yaml' }] });
  });
});
