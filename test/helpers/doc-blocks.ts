import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './example.js';

/** A fenced block of a Markdown page, with the marker comment just above it (if any). */
export interface DocBlock {
  readonly page: string;
  readonly line: number;
  readonly info: string;
  readonly text: string;
  /** `run: test/…` or `not run: why`, from `<!-- … -->` on the line above the fence. */
  readonly marker: string | null;
}

export function blocksOf(page: string): DocBlock[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const out: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    const above = /^<!--\s*(.*?)\s*-->$/.exec(lines[i - 1] ?? '')?.[1] ?? null;
    out.push({
      page,
      line: i + 1,
      info: open[1] ?? '',
      text: `${lines.slice(i + 1, end).join('\n')}\n`,
      marker: above,
    });
    i = end;
  }
  return out;
}

/** A shell block: `sh`, `bash`, `shell` or `console`, or a transcript whose lines start with `$ `. */
export function isShell(block: DocBlock): boolean {
  return ['sh', 'bash', 'shell', 'console'].includes(block.info) || /^\$ /m.test(block.text);
}

/** The shell blocks of `page` marked `<!-- run: <testFile> -->`: the ones that test must run. */
export function blocksRunBy(page: string, testFile: string): DocBlock[] {
  return blocksOf(page).filter((b) => isShell(b) && b.marker === `run: ${testFile}`);
}

/** The config blocks (`yaml`) of `page` marked `<!-- run: <testFile> -->`. */
export function configBlocksRunBy(page: string, testFile: string): DocBlock[] {
  return blocksOf(page).filter((b) => ['yaml', 'yml'].includes(b.info) && b.marker === `run: ${testFile}`);
}
