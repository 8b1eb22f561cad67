import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/**
 * Where an unset `${NAME}` can come from: a `.env.example` beside the config that sets it (the
 * shipped config/.env.example, which `npm start` loads by itself). Returns the note to append to
 * "environment variable NAME is not set", or '' when that file does not set the name.
 */
export function exampleEnvBeside(configFile: string): (name: string) => string {
  const file = join(dirname(configFile), '.env.example');
  let names: Set<string> | null = null;
  return (name) => {
    names ??= namesIn(file);
    if (!names.has(name)) return '';
    const shown = relative(process.cwd(), file) || file;
    return ` (an example value is in ${shown}; to use it: set -a; . ${shown}; set +a)`;
  };
}

function namesIn(file: string): Set<string> {
  try {
    const text = readFileSync(file, 'utf8');
    return new Set(
      [...text.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=/gm)].map((m) => m[1] ?? ''),
    );
  } catch {
    return new Set();
  }
}
