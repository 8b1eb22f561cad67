import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/example.js';
import { anchors, links, markdownFiles, readPage, slug, userPages } from './helpers/markdown.js';

const root = ROOT;
const files = markdownFiles();

describe('documentation links', () => {
  it('finds the Markdown files of the repository, and reads anchors as GitHub makes them', () => {
    expect(files).toContain('README.md');
    expect(files).toContain('docs/README.md');
    expect(files.some((f) => f.startsWith('node_modules/'))).toBe(false);
    expect(slug('Path A: the lead id is known — sign a lead token on your server')).toBe(
      'path-a-the-lead-id-is-known--sign-a-lead-token-on-your-server',
    );
    expect(slug('Behind a proxy (`client_ip.trusted_proxies`)')).toBe(
      'behind-a-proxy-client_iptrusted_proxies',
    );
    expect([...anchors('# A\n## A\n```\n# not a heading\n```\n')]).toEqual(['a', 'a-1']);
    expect(links('[x](a.md#b) `[y](c.md)` ![z](d.svg)\n```\n[w](e.md)\n```\n')).toEqual(['a.md#b', 'd.svg']);
  });

  it.each(files)('%s: every relative link and #anchor resolves', (page) => {
    const broken: string[] = [];
    for (const link of links(readPage(page))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // a web page: judged below, for the docs
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? join(root, page) : resolve(dirname(join(root, page)), path);
      if (relative(root, target).startsWith('..') || !existsSync(target)) {
        broken.push(link);
        continue;
      }
      if (anchor === undefined) continue;
      // An anchor into a Markdown page names one of its headings.
      if (!target.endsWith('.md') || statSync(target).isDirectory()) {
        broken.push(link);
        continue;
      }
      if (!anchors(readPage(relative(root, target))).has(anchor)) broken.push(link);
    }
    expect(broken).toEqual([]);
  });

  it.each(userPages())('%s links to no web page: the docs stand on their own', (page) => {
    expect(links(readPage(page)).filter((l) => /^[a-z][a-z0-9+.-]*:/i.test(l))).toEqual([]);
  });
});

describe('the docs map', () => {
  /** The target layout (issue 52): every page exists and docs/README.md links it. */
  const LAYOUT = [
    'getting-started.md',
    'guides/kubernetes-sidecar.md',
    'guides/nginx.md',
    'guides/caddy.md',
    'guides/envoy-gateway.md',
    'guides/istio.md',
    'guides/redis.md',
    'guides/signing-secrets.md',
    'guides/many-keys.md',
    'guides/workers.md',
    'guides/tracing.md',
    'guides/merchant.md',
    'reference/config.md',
    'reference/cli.md',
    'reference/headers.md',
    'reference/errors.md',
    'reference/metrics.md',
    'explanation/security-model.md',
    'explanation/architecture.md',
    'explanation/performance.md',
  ];

  it('has every page of the layout, each reachable from docs/README.md', () => {
    const map = new Set(links(readPage('docs/README.md')).map((l) => l.split('#')[0]));
    for (const page of LAYOUT) {
      expect(existsSync(join(root, 'docs', page)), page).toBe(true);
      expect(map.has(page), `docs/README.md links ${page}`).toBe(true);
    }
  });

  it('reaches every page under docs/ from docs/README.md, following links', () => {
    const pages = files.filter((f) => f.startsWith('docs/'));
    const reached = new Set(['docs/README.md']);
    const queue = ['docs/README.md'];
    for (let page = queue.shift(); page !== undefined; page = queue.shift()) {
      for (const link of links(readPage(page))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
        let target = relative(root, resolve(dirname(join(root, page)), link.split('#')[0] ?? ''));
        if (existsSync(join(root, target, 'README.md'))) target = join(target, 'README.md');
        if (target.endsWith('.md') && target.startsWith('docs/') && !reached.has(target)) {
          reached.add(target);
          queue.push(target);
        }
      }
    }
    expect(pages.filter((p) => !reached.has(p))).toEqual([]);
  });

  it('every page starts with its title, then says what it is for', () => {
    for (const page of userPages().filter((p) => p.startsWith('docs/'))) {
      const [title, blank, first] = readPage(page).split('\n');
      expect(title, page).toMatch(/^# \S/);
      expect(blank, page).toBe('');
      // a sentence, not straight into a section, a table or a block
      expect(first ?? '', page).toMatch(/^(?![#|]|```|<!--)\S/);
    }
  });
});

describe('CHANGELOG.md', () => {
  const changelog = readPage('CHANGELOG.md');
  const releases = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)].map((m) => ({
    version: m[1] ?? '',
    date: m[2],
  }));

  it('opens with Unreleased, then the releases newest first, each dated', () => {
    expect(releases[0]?.version).toBe('Unreleased');
    const dated = releases.slice(1);
    expect(dated.length).toBeGreaterThan(0);
    for (const r of dated) expect(r.version, r.version).toMatch(/^\d+\.\d+\.\d+$/);
    for (const r of dated) expect(r.date, r.version).toBeDefined();
    const dates = dated.map((r) => r.date ?? '');
    expect([...dates].sort().reverse()).toEqual(dates);
  });

  it("names package.json's version as its newest release (leadgate --version prints it)", () => {
    const pkg = JSON.parse(readPage('package.json')) as { version: string };
    expect(releases[1]?.version).toBe(pkg.version);
  });
});
