import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** A directed graph: each node and the nodes it imports. */
export type Graph = ReadonlyMap<string, ReadonlySet<string>>;

/** Every `import … from`, `export … from`, `import '…'` and `import('…')` with a relative target. */
const RELATIVE =
  /\b(?:import|export)\s[^'"`;]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The relative specifiers one source text imports, type-only imports included. */
export function relativeImports(source: string): string[] {
  return [...source.matchAll(RELATIVE)].map((m) => m[1] ?? m[2] ?? '');
}

/** Files of `src` (paths relative to it) → the files they import. */
export function fileGraph(src: string): Graph {
  const graph = new Map<string, Set<string>>();
  for (const file of tsFiles(src)) {
    const targets = relativeImports(readFileSync(file, 'utf8')).map((spec) =>
      relative(src, resolve(dirname(file), spec.replace(/\.js$/, '.ts'))),
    );
    graph.set(relative(src, file), new Set(targets));
  }
  return graph;
}

/** A file's part: its top folder (`auth`), or the file's own name at the top of `src` (`state`). */
export function partOf(file: string): string {
  const [first = '', ...rest] = file.split('/');
  return rest.length > 0 ? first : first.replace(/\.ts$/, '');
}

/** The graph of parts: an edge for every import from one part into another. */
export function partGraph(files: Graph): Graph {
  const graph = new Map<string, Set<string>>();
  for (const [file, targets] of files) {
    const from = partOf(file);
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const target of targets) if (partOf(target) !== from) edges.add(partOf(target));
  }
  return graph;
}

/** The circles of a graph: its strongly connected components with more than one node, or a self-loop. */
export function circles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = stack.splice(stack.indexOf(v));
    if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}
