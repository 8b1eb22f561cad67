import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';

export class UsageError extends Error {}

/**
 * parseArgs with string options (and `flags`); unknown options and stray words are usage errors.
 * `command` names a command that reads a config (`serve`, `check`): a stray word there is most
 * likely the config's path, and the error says the exact command to type instead.
 */
export function parseOptions<K extends string>(
  args: string[],
  names: readonly K[],
  flags: readonly string[] = [],
  command?: string,
): Partial<Record<K, string>> & Record<string, string | boolean | undefined> {
  try {
    const { values } = parseArgs({
      args,
      options: {
        ...Object.fromEntries(names.map((n) => [n, { type: 'string' as const }])),
        ...Object.fromEntries(flags.map((n) => [n, { type: 'boolean' as const }])),
      },
      strict: true,
      allowPositionals: false,
    });
    return values as Partial<Record<K, string>> & Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new UsageError(describeArgError(err, args, [...names, ...flags], command));
  }
}

/**
 * parseArgs' messages quote the offending argument, which may be a credential typed in the
 * wrong place (`leadgate hash-key sk_live_...`): say what is wrong without repeating it.
 */
function describeArgError(
  err: unknown,
  args: readonly string[],
  known: readonly string[],
  command: string | undefined,
): string {
  const code = (err as { code?: string }).code;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && command !== undefined) {
    return configAsOption(command, args);
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    return 'this command takes options only (credentials come from stdin or the environment, never the command line)';
  }
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const names = args.filter((a) => a.startsWith('-')).map((a) => a.split('=')[0] ?? '');
    const name = names.find((n) => !known.includes(n.replace(/^--?/, ''))) ?? '';
    return /^--?[a-z][a-z-]*$/.test(name) ? `unknown option ${name}` : 'unknown option';
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') return 'an option is missing its value';
  return 'invalid arguments';
}

/**
 * `leadgate serve config/gateway.yaml`: the config is an option. The word is repeated only when it
 * names an existing file (a path, so not a credential pasted by mistake).
 */
function configAsOption(command: string, args: readonly string[]): string {
  const words = args.filter((a) => !a.startsWith('-'));
  const file = words.length === 1 && words[0] !== undefined && existsSync(words[0]) ? words[0] : null;
  const path = file !== null && /^[\w./-]+$/.test(file) ? file : 'PATH';
  return `the config is given with --config: leadgate ${command} --config ${path}`;
}

export function configPathFrom(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return option ?? env.LEADGATE_CONFIG ?? 'config/gateway.yaml';
}

/** The signing secret for the merchant-side helpers: from the environment, never from argv. */
export function signingSecretFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const secret = env.LEADGATE_SIGNING_SECRET;
  if (secret === undefined || secret === '') {
    throw new UsageError(
      "set LEADGATE_SIGNING_SECRET to the API key's signing secret (it is never read from argv)",
    );
  }
  return secret;
}

/** Runs a subcommand body, turning usage errors into exit 2 with a message. */
export async function guarded(body: () => Promise<number> | number): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`leadgate: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
