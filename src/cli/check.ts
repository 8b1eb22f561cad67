import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigProblem, formatProblem, loadConfig } from '../config/load.js';
import { locate } from '../config/problems.js';
import { configPathFrom, guarded, parseOptions } from './args.js';

/**
 * `leadgate check [--strict]`: exit 0 with a summary, or exit 1 listing every problem with file
 * and line. Warnings (placeholder or short secrets) are listed and pass, unless `--strict`.
 */
export function runCheck(args: string[]): Promise<number> {
  return guarded(() => {
    const options = parseOptions(args, ['config'], ['strict']);
    const path = configPathFrom(options.config);
    const strict = options.strict === true;
    try {
      const config = loadConfig(path);
      const warnings = locate(config.warnings, readOrNull);
      for (const w of warnings) process.stderr.write(`${strict ? '' : 'warning: '}${formatProblem(w)}\n`);
      if (strict && config.warnings.length > 0) {
        process.stderr.write(`${config.warnings.length} problem(s) found (--strict: warnings count)\n`);
        return 1;
      }
      const leads =
        config.leads.kind === 'file'
          ? `${config.leads.records.length} leads from file`
          : 'leads from upstream';
      const warned = config.warnings.length > 0 ? `, ${config.warnings.length} warning(s)` : '';
      process.stdout.write(`${config.file}: ok (${config.keys.size} keys, ${leads}${warned})\n`);
      return 0;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of byPlace(err.problems)) process.stderr.write(`${formatProblem(problem)}\n`);
      process.stderr.write(`${err.problems.length} problem(s) found\n`);
      return 1;
    }
  });
}

function readOrNull(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Problems in the order of the files' lines, as an editor would walk them. */
function byPlace(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => a.file.localeCompare(b.file) || (a.line ?? 0) - (b.line ?? 0));
}
