import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { circles, fileGraph, partGraph, relativeImports } from './helpers/imports.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const files = fileGraph(join(root, 'src'));
const parts = partGraph(files);

/** The rows of the `## Layers` table in docs/explanation/architecture.md: each part named there → its layer. */
function layerTable(markdown: string): Map<string, number> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Layers')) ?? '';
  const layers = new Map<string, number>();
  for (const row of section.matchAll(/^\| *(\d+) *\|([^|]*)\|/gm)) {
    for (const name of (row[2] ?? '').matchAll(/`([^`]+)`/g)) {
      layers.set((name[1] ?? '').replace(/\/$|\.ts$/, ''), Number(row[1]));
    }
  }
  return layers;
}

describe('the import graph of src/ (type imports included)', () => {
  it('reads every kind of relative import, and finds a circle where there is one', () => {
    const text =
      "import type { A } from './a.js';\nexport { b } from '../b.js';\nimport './c.js';\nawait import('./d.js');\nimport { z } from 'zod';";
    expect(relativeImports(text)).toEqual(['./a.js', '../b.js', './c.js', './d.js']);
    const graph = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a'])],
    ]);
    expect(circles(graph)).toEqual([['a', 'b', 'c']]);
    expect(files.get('generation.ts')?.has('config/types.ts')).toBe(true);
  });

  it('has no circle of files', () => {
    expect(circles(files)).toEqual([]);
  });

  it('has no circle of folders', () => {
    expect(circles(parts)).toEqual([]);
  });

  it('follows the layers of docs/explanation/architecture.md: every part is in one, and imports only lower ones', () => {
    const layers = layerTable(readFileSync(join(root, 'docs/explanation/architecture.md'), 'utf8'));
    expect([...layers.keys()].sort()).toEqual([...parts.keys()].sort());
    const upward: string[] = [];
    for (const [from, targets] of parts) {
      for (const to of targets) {
        if ((layers.get(to) ?? 0) >= (layers.get(from) ?? 0)) upward.push(`${from} → ${to}`);
      }
    }
    expect(upward).toEqual([]);
  });
});
