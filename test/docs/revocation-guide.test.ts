import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { collect } from '../helpers/collect.js';
import { blocksRunBy } from '../helpers/doc-blocks.js';
import { ROOT } from '../helpers/example.js';
import { KEYS, keysYaml, writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { requires } from '../helpers/optional.js';
import { BIN } from '../helpers/process.js';
import { hasRedis, startRedis, type TestRedis } from '../helpers/redis.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/upstream.js';

const PAGE = 'docs/guides/revocation.md';

describe.runIf(requires('redis-server', hasRedis, 'apt-get install redis-server'))(
  `${PAGE}: the commands, as written, against a gateway on a real Redis`,
  () => {
    let redis: TestRedis;
    let upstream: RecordingUpstream;
    let gw: Awaited<ReturnType<typeof startTestGateway>>;
    let configPath: string;
    beforeAll(async () => {
      redis = await startRedis();
      upstream = await startRecordingUpstream();
      configPath = writeConfig({
        upstream: upstream.url,
        keys: keysYaml().replace('name: storefront,', 'name: storefront-web,'),
        extra: `state: { redis: { url: "${redis.url}" } }`,
      });
      gw = await startTestGateway(configPath);
    });
    afterAll(async () => {
      await gw?.close();
      await upstream?.close();
      await redis?.stop();
    });

    it('runs the block: revoke a key and a lead, list them, lift the key', async () => {
      const blocks = blocksRunBy(PAGE, 'test/docs/revocation-guide.test.ts');
      expect(blocks.length).toBe(1);
      const script = blocks[0]?.text ?? '';
      // the one change: the config is this test's, not /etc/leadgate/gateway.yaml
      expect(script).toContain('/etc/leadgate/gateway.yaml');
      // `leadgate` on PATH, as `npm i -g` would put it
      const bin = mkdtempSync(join(tmpdir(), 'leadgate-bin-'));
      writeFileSync(join(bin, 'leadgate'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
      chmodSync(join(bin, 'leadgate'), 0o755);
      const r = await collect(
        'bash',
        ['-e', '-c', script.replaceAll('/etc/leadgate/gateway.yaml', configPath)],
        {
          cwd: ROOT,
          env: { PATH: `${bin}:${process.env.PATH}`, HOME: process.env.HOME, USER: 'alice' },
          timeoutMs: 60_000,
        },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(
        /^revoked key storefront-web at \S+Z by alice \(reason: key in a public repo\): every gateway answers it 401 revoked_api_key within 1 s/m,
      );
      expect(r.stdout).toMatch(/^revoked lead 64f1c2a9e3 at \S+Z by alice \(reason: ticket 4711\)/m);
      expect(r.stdout.match(/^applied on 1 of 1 gateway\(s\) seen in the last 10 s$/gm)?.length).toBe(3);
      expect(r.stdout).toMatch(/^KIND +NAME +REVOKED AT +BY +LIFTS ITSELF AT +REASON$/m);
      expect(r.stdout).toMatch(/^key +storefront-web +\S+Z +alice +- +key in a public repo$/m);
      expect(r.stdout).toMatch(/^lead +64f1c2a9e3 +\S+Z +alice +\S+Z +ticket 4711$/m);
      expect(r.stdout).toContain('lifted the revocation of key storefront-web');
      // the key works again, the lead stays revoked
      const answer = await ask(gw.apiPort, {
        path: '/api/v2/merchant/orders',
        headers: { 'x-apikey': KEYS.storefront.key, 'x-source': 'web' },
      });
      expect(answer.json().code).toBe('missing_lead_credential');
    }, 90_000);
  },
);
