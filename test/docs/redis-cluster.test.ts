import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { configBlocksRunBy } from '../helpers/doc-blocks.js';
import { keysYaml } from '../helpers/fixture.js';

/** docs/guides/redis-cluster.md: its config block, as written, is a config leadgate loads. */
describe('docs/guides/redis-cluster.md', () => {
  it('its config block loads, naming the cluster and its seed nodes', () => {
    const blocks = configBlocksRunBy('docs/guides/redis-cluster.md', 'test/docs/redis-cluster.test.ts');
    expect(blocks).toHaveLength(1);
    const dir = mkdtempSync(join(tmpdir(), 'leadgate-docs-cluster-'));
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `listen: { host: 127.0.0.1, port: 0 }
upstream: { url: "http://127.0.0.1:9" }
${blocks[0]?.text ?? ''}${keysYaml()}`,
    );
    const config = loadConfig(join(dir, 'gateway.yaml'), { env: { REDIS_PASSWORD: 'from-the-environment' } });
    expect(config.state.redis?.target).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'redis-0.redis', port: 6379 },
        { host: 'redis-1.redis', port: 6379 },
        { host: 'redis-2.redis', port: 6379 },
      ],
      tls: false,
    });
    expect(config.state.redis?.password).toBe('from-the-environment');
    expect(config.digest.singleUse).toBe(true);
  });
});
