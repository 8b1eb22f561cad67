import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { metricRows, metricsMarkdown } from '../../src/cli/metrics-docs.js';
import { configFields } from '../../src/config/reference.js';
import { CATALOGUE } from '../../src/contract/errors.js';
import { ask } from '../helpers/client.js';
import { blocksOf, isShell } from '../helpers/doc-blocks.js';
import { ROOT } from '../helpers/example.js';
import { writeConfig } from '../helpers/fixture.js';
import { startTestGateway } from '../helpers/gateway.js';
import { userPages, withoutFences } from '../helpers/markdown.js';
import { startRecordingUpstream } from '../helpers/upstream.js';

/** Every page a user reads: the README, SECURITY.md, the changelog, docs/, the bench's README, the client's. */
const PAGES = [...userPages(), 'packages/client/README.md'];
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

  it("docs/development.md's source tree names every folder of src/", () => {
    const tree = blocksOf('docs/development.md').find((b) => b.info === '' && b.text.startsWith('src/\n'));
    expect(tree).toBeDefined();
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    const listed = folders.filter((f) => new RegExp(`(^|[\\s,])${f}/`, 'm').test(tree?.text ?? ''));
    expect(listed).toEqual(folders);
  });
});

describe('docs drift: metrics', () => {
  /** Every `leadgate_*` name the code gives a metric, found in its source. */
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

  let scraped: Set<string>;
  let known: Set<string>;
  beforeAll(async () => {
    known = new Set((await metricRows()).map((r) => r.name));
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

  it('docs/reference/metrics.md is generated from the registries (npm run schema)', async () => {
    expect(read('docs/reference/metrics.md')).toBe(await metricsMarkdown());
  });

  it('the registries the reference is generated from hold every metric the code names', () => {
    expect([...known].sort()).toEqual([...registered()].sort());
  });

  it('the names a running gateway exports are among them (pool-only ones aside)', () => {
    expect(scraped.size).toBeGreaterThan(10);
    for (const name of scraped) expect(known.has(name), name).toBe(true);
  });

  it.each(PAGES)('%s names no metric the code does not have', (page) => {
    // in inline code outside code blocks (a block holds PromQL, but also nginx upstreams and variables)
    const spans = [...withoutFences(read(page)).matchAll(/`([^`\n]*)`/g)].map((m) => m[1] ?? '');
    const named = spans.flatMap((span) =>
      [...span.matchAll(/\b(leadgate_[a-z_]+)/g)].map((m) =>
        (m[1] ?? '').replace(/_(bucket|sum|count)$/, ''),
      ),
    );
    expect(named.filter((n) => !known.has(n))).toEqual([]);
  });
});

describe('docs drift: error codes and config fields', () => {
  /** `401 \`a\``, `400 \`a\`, \`b\` or \`c\``: a status, then the codes it answers with. */
  const namedCodes = (text: string): string[] =>
    [...text.matchAll(/\b[45]\d\d\s+((?:`[a-z_]+`(?:,\s*|\s+or\s+|\s+and\s+)?)+)/g)].flatMap((m) =>
      [...(m[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((c) => c[1] ?? ''),
    );

  it('reads the codes a page names after a status', () => {
    expect(namedCodes('is 401 `replayed_digest`; 400 `missing_source`, `invalid_source` or `x`')).toEqual([
      'replayed_digest',
      'missing_source',
      'invalid_source',
      'x',
    ]);
  });

  it.each(PAGES)('%s names no error code the catalogue does not have', (page) => {
    const unknown = namedCodes(read(page)).filter((c) => !(c in CATALOGUE));
    expect(unknown).toEqual([]);
  });

  const fields = configFields().map((f) => f.path);
  const sections = new Set(fields.map((f) => f.split(/[.[]/)[0] ?? ''));
  /** A dotted name is a config field when it starts with a top-level section (`state.redis.url`). */
  const isField = (name: string) =>
    fields.some((f) => f === name || f.startsWith(`${name}.`) || f.startsWith(`${name}[]`));

  it.each(PAGES)('%s names no config field the schema does not have', (page) => {
    const named = [...withoutFences(read(page)).matchAll(/`([a-z_]+(?:\[\])?(?:\.[a-z_]+(?:\[\])?)+)`/g)]
      .map((m) => m[1] ?? '')
      .filter((n) => sections.has(n.split(/[.[]/)[0] ?? '') && !FILE.test(n));
    expect(named.filter((n) => !isField(n))).toEqual([]);
  });
});

describe('docs drift: config blocks', () => {
  /** Blocks a reader pastes into a config or a proxy: each is run by a test or says why not. */
  const CONFIG = ['yaml', 'yml', 'nginx', 'caddyfile', 'caddy', 'json', 'toml', 'ini', 'conf'];

  it('every config block is run by a test that reads it, or says why it is not', () => {
    const blocks = PAGES.flatMap((page) => blocksOf(page).filter((b) => CONFIG.includes(b.info)));
    expect(blocks.length).toBeGreaterThan(5);
    const unmarked: string[] = [];
    for (const b of blocks) {
      const runBy = /^run: (test\/\S+\.test\.ts)$/.exec(b.marker ?? '')?.[1];
      if (runBy !== undefined) {
        const test = existsSync(join(ROOT, runBy)) ? readFileSync(join(ROOT, runBy), 'utf8') : '';
        expect(test.includes('configBlocksRunBy('), `${b.page}:${b.line}`).toBe(true);
      } else if (!/^not run: \S.{10,}/.test(b.marker ?? '')) unmarked.push(`${b.page}:${b.line}`);
    }
    expect(unmarked).toEqual([]);
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
