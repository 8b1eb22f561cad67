import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ask } from '../helpers/client.js';
import { blocksOf, isShell } from '../helpers/doc-blocks.js';
import { ROOT } from '../helpers/example.js';
import { writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startRecordingUpstream } from '../helpers/upstream.js';

/** Every page a user reads: the README, SECURITY.md, docs/ and the client package's README. */
const PAGES = [
  'README.md',
  'SECURITY.md',
  'packages/client/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (page: string) => readFileSync(join(ROOT, page), 'utf8');

/** Files in git: a name the docs give without a folder must be one of these. */
const TRACKED = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n');
const BASENAMES = new Set(TRACKED.map((f) => basename(f)));
/** What the build or a run writes: named by the docs, absent from a clone. */
const GENERATED = /^(dist|\.cache|\.image|node_modules|bench\/results|coverage)\//;
const FILE = /\.(ts|js|mjs|cjs|json|ya?ml|md|sh|py|rb|php|go|svg|caddy|conf|toml)$/;

/**
 * The repository paths a page names: `a/b.ts` or `a/b/` in backticks, and `a/b.ts` in plain
 * fenced blocks (source trees). Media types, URL paths and package names have no file ending.
 */
function namedPaths(page: string): string[] {
  const text = read(page);
  const ticked = [...text.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`\s]+)`/g)].map((m) => m[1] ?? '');
  const inTrees = blocksOf(page)
    .filter((b) => b.info === '')
    .flatMap((b) => [...b.text.matchAll(/(?<![\w/.-])([\w-]+(?:\/[\w.-]+)+)/g)].map((m) => m[1] ?? ''));
  return [...new Set([...ticked, ...inTrees])].filter(
    (p) => !p.startsWith('/') && !p.includes('://') && (FILE.test(p) || (p.endsWith('/') && p.includes('/'))),
  );
}

function exists(page: string, path: string): boolean {
  if (GENERATED.test(path)) return true;
  if (!path.includes('/')) return BASENAMES.has(path);
  const clean = path.replace(/\/$/, '');
  return [join(ROOT, clean), join(ROOT, dirname(page), clean), join(ROOT, 'src', clean)].some((p) =>
    existsSync(p),
  );
}

describe('docs drift: what the pages name exists', () => {
  it.each(PAGES)('%s: every repository path it names exists', (page) => {
    const missing = namedPaths(page).filter((p) => !exists(page, p));
    expect(missing).toEqual([]);
  });

  it("the README's source tree names every folder of src/", () => {
    const tree = blocksOf('README.md').find((b) => b.info === '' && b.text.startsWith('src/\n'));
    expect(tree).toBeDefined();
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    const listed = folders.filter((f) => new RegExp(`(^|[\\s,])${f}/`, 'm').test(tree?.text ?? ''));
    expect(listed).toEqual(folders);
  });
});

describe('docs drift: the metrics table', () => {
  /** Every `leadgate_*` name the code gives a metric. */
  const registered = (): Set<string> => {
    const names = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.ts')) {
          for (const m of readFileSync(path, 'utf8').matchAll(/'(leadgate_[a-z_]+)'/g)) names.add(m[1] ?? '');
        }
      }
    };
    walk(join(ROOT, 'src'));
    return names;
  };

  /** The names in the metrics tables of the README and docs/operating.md (rows start with the name). */
  const tabled = (): Set<string> => {
    const rows = [read('README.md'), read('docs/operating.md')]
      .join('\n')
      .split('\n')
      .filter((l) => /^\| `leadgate_/.test(l));
    return new Set(
      rows.flatMap((r) =>
        [...(r.split('|')[1] ?? '').matchAll(/`(leadgate_[a-z_]+)`/g)].map((m) => m[1] ?? ''),
      ),
    );
  };

  let scraped: Set<string>;
  beforeAll(async () => {
    const upstream = await startRecordingUpstream();
    const gw = await startTestGateway(writeConfig({ upstream: upstream.url }));
    try {
      const text = (await ask(gw.adminPort, { path: '/metrics' })).text;
      scraped = new Set([...text.matchAll(/^# TYPE (leadgate_[a-z_]+) /gm)].map((m) => m[1] ?? ''));
    } finally {
      await gw.close();
      await upstream.close();
    }
  });

  it('lists every metric the code registers, and nothing else', () => {
    expect([...tabled()].sort()).toEqual([...registered()].sort());
  });

  it('the names found in the code are the ones a running gateway exports (pool-only ones aside)', () => {
    const names = registered();
    expect(scraped.size).toBeGreaterThan(10);
    for (const name of scraped) expect(names.has(name), name).toBe(true);
  });
});

describe('docs drift: shell blocks', () => {
  const shellBlocks = PAGES.flatMap((page) => blocksOf(page).filter(isShell));

  it('every shell block is run by a test that reads it, or says why it is not', () => {
    expect(shellBlocks.length).toBeGreaterThan(5);
    const unmarked: string[] = [];
    for (const b of shellBlocks) {
      const where = `${b.page}:${b.line}`;
      const runBy = /^run: (test\/\S+\.test\.ts)$/.exec(b.marker ?? '')?.[1];
      if (runBy !== undefined) {
        // the test named picks its blocks by this marker (blocksRunBy), so it runs this one
        const test = existsSync(join(ROOT, runBy)) ? readFileSync(join(ROOT, runBy), 'utf8') : '';
        expect(test.includes('blocksRunBy(') && test.includes(`'${b.page}'`), where).toBe(true);
      } else if (!/^not run: \S.{10,}/.test(b.marker ?? '')) {
        unmarked.push(where);
      }
    }
    expect(unmarked).toEqual([]);
  });
});
