import type { Path } from './problems.js';

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
