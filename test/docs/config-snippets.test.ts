import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { configBlocksRunBy } from '../helpers/doc-blocks.js';
import { userPages } from '../helpers/markdown.js';

const TEST = 'test/docs/config-snippets.test.ts';
const blocks = userPages().flatMap((page) => configBlocksRunBy(page, TEST));

/** What a snippet leaves out: a listener, an upstream and one key, as a reader's config has. */
const BASE: Record<string, string> = {
  listen: 'listen: { host: 127.0.0.1, port: 0 }',
  upstream: 'upstream: { url: http://127.0.0.1:3000 }',
  keys: `keys:
  - name: storefront-web
    key: \${STOREFRONT_KEY}
    access_type: READ
    purpose: STOREFRONT
    signing_secret: \${STOREFRONT_SECRET}`,
};

describe('config snippets in the docs load as leadgate loads a config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leadgate-snippets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the snippets the guides mark for this test', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
  });

  it.each(blocks.map((b) => [`${b.page}:${b.line}`, b] as const))(
    '%s is a valid config fragment, as written',
    (where, block) => {
      const sections = new Set([...block.text.matchAll(/^([a-z_]+):/gm)].map((m) => m[1]));
      expect(sections.size, where).toBeGreaterThan(0);
      // The snippet as it is, below what it leaves out; every ${VAR} it names set, as a deployment sets it.
      const text = [
        ...Object.entries(BASE)
          .filter(([k]) => !sections.has(k))
          .map(([, v]) => v),
        block.text,
      ].join('\n');
      const env: NodeJS.ProcessEnv = {};
      for (const m of text.matchAll(/\$\{([A-Z0-9_]+)\}/g))
        env[m[1] ?? ''] = `${m[1]}-a-value-long-enough-0123456789`;
      const file = join(dir, `${where.replace(/[^\w]+/g, '-')}.yaml`);
      writeFileSync(file, text);
      const resolved = validateConfig(file, { env });
      // Every top-level section of the snippet is in force, not dropped on the way.
      for (const section of sections) {
        if (section === 'keys') expect(resolved.keys.length, where).toBeGreaterThan(0);
        else
          expect(
            (resolved.raw as Record<string, unknown>)[section ?? ''],
            `${where}: ${section}`,
          ).toBeDefined();
      }
    },
  );
});
