import { ConfigError, formatProblem, loadConfig } from '../config/load.js';
import { configPathFrom, guarded, parseOptions } from './args.js';

/** `leadgate check`: exit 0 with a summary, or exit 1 listing every problem with file and line. */
export function runCheck(args: string[]): Promise<number> {
  return guarded(() => {
    const { config: option } = parseOptions(args, ['config']);
    const path = configPathFrom(option);
    try {
      const config = loadConfig(path);
      const leads =
        config.leads.kind === 'file'
          ? `${config.leads.records.length} leads from file`
          : 'leads from upstream';
      process.stdout.write(`${config.file}: ok (${config.keys.size} keys, ${leads})\n`);
      return 0;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of err.problems) process.stderr.write(`${formatProblem(problem)}\n`);
      process.stderr.write(`${err.problems.length} problem(s) found\n`);
      return 1;
    }
  });
}
