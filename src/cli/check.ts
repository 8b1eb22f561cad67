import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { overridesInEffect } from '../config/env-overrides.js';
import {
  buildConfig,
  buildKeys,
  ConfigError,
  type ConfigProblem,
  formatProblem,
  type ResolvedConfig,
  validateConfig,
} from '../config/load.js';
import { locate } from '../config/problems.js';
import type { Config } from '../config/types.js';
import { configPathFrom, guarded, parseOptions } from './args.js';

/**
 * `leadgate check [--strict]`: exit 0 with a summary, or exit 1 listing every problem with file
 * and line. Warnings (placeholder or short secrets) are listed and pass, unless `--strict`. The
 * summary says where the leads come from and the addresses `serve` would use, with the
 * `LEADGATE_*` overrides of the environment applied, as `serve` applies them.
 */
export function runCheck(args: string[]): Promise<number> {
  return guarded(() => {
    const options = parseOptions(args, ['config'], ['strict'], 'check');
    const path = configPathFrom(options.config);
    const strict = options.strict === true;
    try {
      const resolved = validateConfig(path);
      const config = buildConfig(resolved, buildKeys(resolved.keys));
      const warnings = locate(config.warnings, readOrNull);
      for (const w of warnings) process.stderr.write(`${strict ? '' : 'warning: '}${formatProblem(w)}\n`);
      if (strict && config.warningCount > 0) {
        process.stderr.write(`${config.warningCount} problem(s) found (--strict: warnings count)\n`);
        return 1;
      }
      const warned = config.warningCount > 0 ? `, ${config.warningCount} warning(s)` : '';
      process.stdout.write(
        `${config.file}: ok (${config.keys.size} keys, ${leadsSummary(resolved)}${warned})\n`,
      );
      process.stdout.write(`${listeners(config)}\n`);
      return 0;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of byPlace(err.problems)) process.stderr.write(`${formatProblem(problem)}\n`);
      process.stderr.write(`${err.problems.length} problem(s) found\n`);
      return 1;
    }
  });
}

/** Where the lookup's leads come from, saying so when it is the default (no `leads:` section). */
function leadsSummary(resolved: ResolvedConfig): string {
  const leads = resolved.leads;
  if (leads.kind === 'upstream') return 'leads from upstream';
  if (resolved.raw.leads.file !== undefined) return `${leads.records.length} leads from file`;
  if (leads.file === null) return 'no leads: no leads section, and no leads.yaml beside the config';
  const shown = relative(process.cwd(), leads.file) || leads.file;
  return `${leads.records.length} leads from file ${shown}: no leads section, so leads.yaml beside the config (the default)`;
}

/** `listen 127.0.0.1:8080, admin …, upstream …`, and the environment overrides that set them. */
function listeners(config: Config): string {
  const parts = [
    `listen ${config.listen.host}:${config.listen.port}`,
    `admin ${config.admin.host}:${config.admin.port}`,
    ...(config.forwardAuth === null
      ? []
      : [`forward_auth ${config.forwardAuth.listen.host}:${config.forwardAuth.listen.port}`]),
    `upstream ${config.upstream.url.origin}`,
  ];
  const overrides = overridesInEffect(process.env);
  return `${parts.join(', ')}${overrides.length > 0 ? ` (from the environment: ${overrides.join(', ')})` : ''}`;
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
