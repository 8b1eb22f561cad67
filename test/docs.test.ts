import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const pages = [
  'README.md',
  'SECURITY.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' }).map((f) => `docs/${f}`),
].filter((f) => f.endsWith('.md') && existsSync(join(root, f)));

/** Markdown links `[text](target)` outside code blocks. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '');
}

describe('documentation links', () => {
  it.each(pages)(
    '%s links only to files inside the repository (no web pages, no ../shared), and they exist',
    (page) => {
      const text = readFileSync(join(root, page), 'utf8');
      const broken: string[] = [];
      for (const link of links(text)) {
        if (link.startsWith('#')) continue;
        // a page on the web is outside the repository too: the docs must stand on their own
        if (/^[a-z]+:/i.test(link)) {
          broken.push(link);
          continue;
        }
        const target = resolve(dirname(join(root, page)), link.split('#')[0] ?? '');
        if (relative(root, target).startsWith('..') || !existsSync(target)) broken.push(link);
      }
      expect(broken).toEqual([]);
    },
  );

  it('docs/ has the pages the README promises', () => {
    for (const page of [
      'reference/api-rules',
      'reference/cli',
      'reference/config',
      'reference/headers',
      'reference/errors',
      'guides/operating',
      'reference/lead-resolver',
      'explanation/architecture',
    ])
      expect(existsSync(join(root, 'docs', `${page}.md`)), page).toBe(true);
  });
});
