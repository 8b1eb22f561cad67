import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

/** `yaml` (with positions, slow) runs only to name the lines of problems: loaded then, not at start. */
const yaml = (): typeof Yaml => createRequire(import.meta.url)('yaml') as typeof Yaml;

/** One problem of a config, placed at a file and line so an operator can go straight to it. */
export interface ConfigProblem {
  readonly file: string;
  readonly line: number | null;
  readonly field: string;
  readonly message: string;
}

export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function formatProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}`;
  return p.field ? `${where}: ${p.field}: ${p.message}` : `${where}: ${p.message}`;
}

export type Path = ReadonlyArray<string | number>;

/**
 * Problems of one YAML file, found by path. Lines are looked up only when there is something to
 * report: the file is parsed a second time, with positions, by `yaml` (the fast parse keeps none).
 */
export class ProblemList {
  private readonly found: Array<{ readonly path: Path; readonly message: string }> = [];
  private lines: ((path: Path) => number | null) | null = null;

  constructor(
    readonly file: string,
    private readonly text: string,
  ) {}

  get size(): number {
    return this.found.length;
  }

  add(path: Path, message: string): void {
    this.found.push({ path, message });
  }

  /** True when a problem was already reported at `path` or below it. */
  has(path: Path): boolean {
    return this.found.some((p) => path.every((part, i) => p.path[i] === part));
  }

  /** The problems with their paths only (`line` null): no second parse. */
  unresolved(): ConfigProblem[] {
    return this.found.map(({ path, message }) => ({
      file: this.file,
      line: null,
      field: path.join('.'),
      message,
    }));
  }

  resolve(): ConfigProblem[] {
    if (this.found.length === 0) return [];
    this.lines ??= lineFinder(this.text);
    const lineOf = this.lines;
    return this.found.map(({ path, message }) => ({
      file: this.file,
      line: lineOf(path),
      field: path.join('.'),
      message,
    }));
  }
}

/** Maps a path in a YAML text to the line its value (or the nearest parent) stands on. */
function lineFinder(text: string): (path: Path) => number | null {
  const { LineCounter, parseDocument } = yaml();
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, keepSourceTokens: false });
  return (path) => {
    for (let n = path.length; n >= 0; n--) {
      const at = path.slice(0, n);
      const node = doc.getIn(at, true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) {
        // A key with no value (`upstrem:`) has no node of its own: point at its pair's key.
        return counter.linePos(node.range[0]).line;
      }
      const key = keyNodeAt(doc.contents, at);
      if (key !== null) return counter.linePos(key).line;
    }
    return null;
  };
}

/** Offset of the key node of the pair at `path`, for pairs whose value is empty. */
function keyNodeAt(root: unknown, path: Path): number | null {
  if (path.length === 0) return null;
  let node = root as { items?: Array<{ key?: { value?: unknown; range?: number[] }; value?: unknown }> };
  for (let i = 0; i < path.length; i++) {
    const part = path[i];
    const items = node?.items;
    if (!Array.isArray(items)) return null;
    const pair =
      typeof part === 'number'
        ? (items[part] as typeof node | undefined)
        : items.find((p) => p.key?.value === part);
    if (pair === undefined) return null;
    if (i === path.length - 1) {
      const range = (pair as { key?: { range?: number[] } }).key?.range;
      return range?.[0] ?? null;
    }
    node = (typeof part === 'number' ? pair : (pair as { value?: unknown }).value) as typeof node;
  }
  return null;
}

/**
 * Lines for problems kept by path only (warnings: finding lines costs a parse with positions, which
 * a reload of a large config should not pay). `leadgate check` asks for them.
 */
export function locate(
  problems: readonly ConfigProblem[],
  read: (file: string) => string | null,
): ConfigProblem[] {
  const finders = new Map<string, ((path: Path) => number | null) | null>();
  return problems.map((p) => {
    if (p.line !== null || p.field === '') return p;
    if (!finders.has(p.file)) {
      const text = read(p.file);
      finders.set(p.file, text === null ? null : lineFinder(text));
    }
    const find = finders.get(p.file);
    const path = p.field.split('.').map((part) => (/^[0-9]+$/.test(part) ? Number(part) : part));
    return { ...p, line: find ? find(path) : null };
  });
}
