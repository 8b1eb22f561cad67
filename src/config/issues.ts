import { type core, toJSONSchema, type ZodType } from 'zod';
import type { Path } from './problems.js';

export interface PathProblem {
  readonly path: Path;
  readonly message: string;
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
