import jsyaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { substituteEnv } from '../../src/config/env-substitution.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { writeConfig } from '../helpers/fixture.js';

/** `levels` anchors, each a list naming the one before `width` times; the first holds `${HOME}`. */
function aliasBomb(levels: number, width: number): string {
  const lines = ['a0: &a0 ["${HOME}"]'];
  for (let i = 1; i <= levels; i++) {
    lines.push(`a${i}: &a${i} [${Array.from({ length: width }, () => `*a${i - 1}`).join(', ')}]`);
  }
  return `${lines.join('\n')}\n`;
}

/** An environment that counts how often each variable is read. */
function countingEnv(values: Record<string, string>): { env: NodeJS.ProcessEnv; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const env = new Proxy(values, {
    get(target, name) {
      if (typeof name === 'string') reads.set(name, (reads.get(name) ?? 0) + 1);
      return typeof name === 'string' ? target[name] : undefined;
    },
  }) as NodeJS.ProcessEnv;
  return { env, reads };
}

describe('substituteEnv', () => {
  it('replaces ${NAME} in strings, copies what holds a replaced string and shares the rest', () => {
    const untouched = { port: 8080, tags: ['a', 'b'] };
    const input = { listen: untouched, keys: [{ key: '${K}', name: 'web' }] };
    const out = substituteEnv(input, '', { K: 'sk_1' }, () => {}) as typeof input;
    expect(out).toEqual({ listen: untouched, keys: [{ key: 'sk_1', name: 'web' }] });
    expect(out.listen).toBe(untouched);
    expect(input.keys[0]?.key).toBe('${K}');
  });

  it('reports an unset variable with the path of the string that names it', () => {
    const unset: string[] = [];
    const out = substituteEnv({ keys: [{ key: 'x${NOPE}y' }] }, '', {}, (path, name) =>
      unset.push(`${path.join('.')} ${name}`),
    );
    expect(out).toEqual({ keys: [{ key: 'xy' }] });
    expect(unset).toEqual(['keys.0.key NOPE']);
  });

  it('walks a YAML alias once however often it is used, and every use gets the same result', () => {
    const text = aliasBomb(4, 4);
    const parsed = jsyaml.load(text, { schema: jsyaml.CORE_SCHEMA }) as Record<string, unknown[]>;
    const { env, reads } = countingEnv({ HOME: '/home/x' });
    const out = substituteEnv(parsed, text, env, () => {}) as Record<string, unknown[]>;
    // Expanded as a tree, the fourth level holds 4^4 = 256 copies of ${HOME}.
    expect(reads.get('HOME')).toBe(1);
    expect(out.a4?.[0]).toBe(out.a3);
    expect(out.a4?.[3]).toBe(out.a3);
    expect(out.a1?.[0]).toEqual(['/home/x']);
    expect(parsed.a0).toEqual(['${HOME}']);
  });

  it('a config of nested aliases (a "billion laughs") is refused with a problem, not expanded', () => {
    // Expanded as a tree: 10^9 strings. Walked as a graph: ten lists.
    const file = writeConfig({ upstream: 'http://127.0.0.1:3000', extra: aliasBomb(9, 10) });
    let problem: unknown;
    try {
      loadConfig(file, { env: { HOME: '/home/x' } });
    } catch (err) {
      problem = err;
    }
    expect(problem).toBeInstanceOf(ConfigError);
    expect((problem as ConfigError).message).toMatch(/unknown field "a0"/);
  });
});
