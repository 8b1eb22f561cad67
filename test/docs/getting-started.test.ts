import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { collect } from '../helpers/collect.js';
import { blocksRunBy } from '../helpers/doc-blocks.js';
import { ROOT } from '../helpers/example.js';
import { requires, runs } from '../helpers/optional.js';

const PAGE = 'docs/getting-started.md';
const hasOpenssl = runs('openssl', ['version']);

describe('docs/getting-started.md: a config of your own, as a user types it', () => {
  // A folder of its own: the page writes my-config/ where it is run.
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-getting-started-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.runIf(requires('openssl', hasOpenssl, 'Debian: apt-get install openssl'))(
    'writes the config, hashes new keys and passes check --strict',
    async () => {
      const blocks = blocksRunBy(PAGE, 'test/docs/getting-started.test.ts');
      expect(blocks.length).toBe(1);
      const script = blocks[0]?.text ?? '';
      // The one change: the binary of this checkout, since the folder is not the repository.
      expect(script).toContain('npx leadgate');
      const r = await collect(
        'bash',
        ['-ec', script.replaceAll('npx leadgate', `node ${ROOT}bin/leadgate.js`)],
        {
          cwd: dir,
          env: { PATH: process.env.PATH, HOME: process.env.HOME },
          timeoutMs: 60_000,
        },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      // what the page's comment promises check prints
      const promise = /^# \.\.\.(.*?)\.\.\.$/m.exec(script)?.[1] ?? '';
      expect(promise).not.toBe('');
      expect(r.stdout).toContain(promise);
      // the config holds no key: only the sha256 of the ones made, as placeholders filled in
      const config = readFileSync(join(dir, 'my-config/gateway.yaml'), 'utf8');
      expect(config).toContain('key_sha256: ${STOREFRONT_KEY_SHA256}');
    },
    60_000,
  );
});
