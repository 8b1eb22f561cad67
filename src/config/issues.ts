import { type core, toJSONSchema, type ZodType } from 'zod';
import type { Path } from './problems.js';

export interface PathProblem {
  readonly path: Path;
  readonly message: string;
}

/**
 * Replaces `${NAME}` in every string from `env`. An unset variable is reported through `onUnset`
 * with the path of the string that names it, and replaced by ''. The input is not changed: what
 * holds a replaced string is copied, the rest is shared (a 100,000-key config is mostly shared).
 * A YAML alias is one object under many paths; when `text` can hold one (it has an `&` anchor),
 * each object is walked once, and every use of it gets the same result (and its unset variables
 * are reported at the first use), so nested aliases cost their size, not what they would expand
 * to. Without an anchor that bookkeeping (~35 ms over 100,000 keys) is left out.
 */
export function substituteEnv(
  value: unknown,
  text: string,
  env: NodeJS.ProcessEnv,
  onUnset: (path: Path, name: string) => void,
): unknown {
  return substituted(value, { env, onUnset, done: text.includes('&') ? new Map() : null }, []);
}

interface Walk {
  readonly env: NodeJS.ProcessEnv;
  readonly onUnset: (path: Path, name: string) => void;
  /** Each object already walked, and what it became; null when nothing is reached twice. */
  readonly done: Map<object, unknown> | null;
}

/**
 * False when no string parsed from `text` can hold `${`: the text has no `$`, and no YAML escape
 * that writes one (`\x24`, `\u0024`, `\U00000024` in a double-quoted scalar). Then
 * {@link substituteEnv} would change nothing, and its walk (~40 ms over 100,000 keys) is skipped.
 */
export function mayNameVariables(text: string): boolean {
  return text.includes('$') || ESCAPED_DOLLAR.test(text);
}

const ESCAPED_DOLLAR = /\\(?:x24|u0024|U00000024)/;

/** `path` is one array, pushed and popped on the way down; reports get a copy. */
function substituted(value: unknown, walk: Walk, path: Array<string | number>): unknown {
  if (typeof value === 'string') {
    if (!value.includes('${')) return value;
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
      const found = walk.env[name];
      if (found === undefined) walk.onUnset([...path], name);
      return found ?? '';
    });
  }
  if (value === null || typeof value !== 'object') return value;
  if (walk.done?.has(value)) return walk.done.get(value);
  const source = value as Record<string | number, unknown>;
  let copy: Record<string | number, unknown> | null = null;
  const visit = (k: string | number) => {
    path.push(k);
    const next = substituted(source[k], walk, path);
    path.pop();
    if (next === source[k]) return;
    copy ??= (Array.isArray(value) ? [...value] : { ...source }) as Record<string | number, unknown>;
    copy[k] = next;
  };
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) visit(i);
  else for (const k of Object.keys(source)) visit(k);
  const result = copy ?? value;
  walk.done?.set(value, result);
  return result;
}

/**
 * zod's issues in an operator's words: an unknown field by name, with "did you mean" when a known
 * field is close; a missing field as missing; an enum with its choices.
 */
export function describeIssues(
  issues: readonly core.$ZodIssue[],
  value: unknown,
  schema: ZodType,
): PathProblem[] {
  const out: PathProblem[] = [];
  let json: JsonSchema | null = null;
  for (const issue of issues) {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      json ??= toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
      const known = fieldsAt(json, path);
      for (const key of issue.keys) {
        const near = closest(key, known);
        out.push({
          path: [...path, key],
          message: `unknown field "${key}"${near ? ` (did you mean "${near}"?)` : ''}`,
        });
      }
    } else if (issue.code === 'invalid_type' && valueAt(value, path) === undefined) {
      out.push({ path, message: `required field "${String(path.at(-1) ?? '')}" is missing` });
    } else if (issue.code === 'invalid_value') {
      out.push({ path, message: `must be one of ${issue.values.map((v) => String(v)).join(', ')}` });
    } else {
      out.push({ path, message: issue.message });
    }
  }
  return out;
}

interface JsonSchema {
  readonly properties?: Record<string, JsonSchema>;
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
  readonly allOf?: readonly JsonSchema[];
}

/** The field names the schema knows for the object at `path`. */
function fieldsAt(schema: JsonSchema, path: Path): string[] {
  let nodes: JsonSchema[] = [schema];
  for (const part of path) {
    nodes = nodes
      .flatMap(expand)
      .flatMap((n) => (typeof part === 'number' ? (n.items ? [n.items] : []) : (n.properties?.[part] ?? [])));
  }
  return [...new Set(nodes.flatMap(expand).flatMap((n) => Object.keys(n.properties ?? {})))];
}

function expand(node: JsonSchema): JsonSchema[] {
  return [node, ...(node.anyOf ?? []).flatMap(expand), ...(node.allOf ?? []).flatMap(expand)];
}

function valueAt(value: unknown, path: Path): unknown {
  let node = value;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[part];
  }
  return node;
}

/** The known name nearest to `name` within a small edit distance, if any. */
function closest(name: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(name.length / 4)) + 1;
  for (const candidate of known) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_v, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}
