import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './example.js';

/** Every Markdown file of the repository: tracked, or new and not ignored (node_modules is). */
export function markdownFiles(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .filter((f) => f !== '' && existsSync(join(ROOT, f)));
}

/** The pages a reader is sent to: the README, SECURITY.md, CHANGELOG.md, docs/ and bench/README.md. */
export function userPages(): string[] {
  return markdownFiles().filter(
    (f) =>
      ['README.md', 'SECURITY.md', 'CHANGELOG.md', 'bench/README.md'].includes(f) || f.startsWith('docs/'),
  );
}

export const readPage = (page: string): string => readFileSync(join(ROOT, page), 'utf8');

/** The text outside fenced code blocks. */
export function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The text outside fenced code blocks and inline code spans (a span becomes empty ``). */
export function prose(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '``');
}

/** Link targets `[text](target)` and `![alt](target)` outside code. */
export function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1] ?? '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a page defines: its headings (duplicates numbered as GitHub does) and `<a id>`s. */
export function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  const text = withoutFences(markdown);
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] ?? '');
  return out;
}
