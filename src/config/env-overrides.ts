import type { Path } from './problems.js';

/**
 * What a deployment changes per environment without copying the config, the way oauth2-proxy's
 * `OAUTH2_PROXY_*` and Kong's `KONG_*` variables do: the listeners' ports and the upstream. A set
 * variable wins over the file; `check` and `serve` apply the same ones, so they agree.
 */
export const ENV_OVERRIDES = [
  { variable: 'LEADGATE_LISTEN_PORT', path: ['listen', 'port'], kind: 'port' },
  { variable: 'LEADGATE_ADMIN_PORT', path: ['admin', 'port'], kind: 'port' },
  { variable: 'LEADGATE_FORWARD_AUTH_PORT', path: ['forward_auth', 'listen', 'port'], kind: 'port' },
  { variable: 'LEADGATE_UPSTREAM_URL', path: ['upstream', 'url'], kind: 'text' },
] as const;

type Plain = Record<string, unknown>;

/**
 * The parsed config with the set overrides written in (a copy; the input is not changed). A value
 * that cannot be used is reported at the field it would set, by the variable's name.
 */
export function applyEnvOverrides(
  value: unknown,
  env: NodeJS.ProcessEnv,
  onProblem: (path: Path, message: string) => void,
): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out = { ...(value as Plain) };
  for (const { variable, path, kind } of ENV_OVERRIDES) {
    const text = env[variable];
    if (text === undefined || text === '') continue;
    const parsed = kind === 'port' ? portOf(text) : text;
    if (parsed === null) {
      onProblem(path, `${variable} is not a port number (0-65535)`);
      continue;
    }
    if (path[0] === 'forward_auth' && out.forward_auth === undefined) {
      onProblem(['forward_auth'], `${variable} is set, but this config has no forward_auth listener`);
      continue;
    }
    setAt(out, path, parsed);
  }
  return out;
}

function portOf(text: string): number | null {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port <= 65535 ? port : null;
}

/**
 * Writes `value` at `path` in `target`, copying each object on the way (the parsed file is not
 * changed, and a large config is not copied whole) and creating the missing ones (`admin:`).
 */
function setAt(target: Plain, path: readonly string[], value: unknown): void {
  let at = target;
  for (const key of path.slice(0, -1)) {
    const next = at[key];
    const plain = next !== null && typeof next === 'object' && !Array.isArray(next);
    at[key] = plain ? { ...(next as Plain) } : {};
    at = at[key] as Plain;
  }
  const last = path.at(-1);
  if (last !== undefined) at[last] = value;
}

/** The overrides in effect, for `check`'s summary: `LEADGATE_LISTEN_PORT=8180`, … */
export function overridesInEffect(env: NodeJS.ProcessEnv): string[] {
  return ENV_OVERRIDES.filter(({ variable }) => (env[variable] ?? '') !== '').map(({ variable, kind }) =>
    kind === 'port' ? `${variable}=${env[variable]}` : variable,
  );
}
