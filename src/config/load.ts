import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { leadsFileSchema } from '../leads/schema.js';
import { upstreamLeadsOf } from '../leads/settings.js';
import { listenerSettingsOf } from '../listener/schema.js';
import { certificateExpiryWarning, loadPair } from '../listener/tls.js';
import { checkedRange, createIpMatcher } from '../net/ip.js';
import { rateLimitsOf } from '../ratelimit/schema.js';
import { storeSettingsOf } from '../store/schema.js';
import { tracingConfigOf } from '../tracing/schema.js';
import { exampleEnvBeside } from './env-example.js';
import { applyEnvOverrides } from './env-overrides.js';
import { mayNameVariables, substituteEnv } from './env-substitution.js';
import { describeIssues } from './issues.js';
import { KeyTable } from './key-table.js';
import { type ResolvedKey, resolveKeys } from './keys.js';
import { parseConfig } from './parse.js';
import { ConfigError, type ConfigProblem, type Path, ProblemList } from './problems.js';
import { configSchema, type RawConfig } from './schema.js';
import type { Config, Lead, LeadsConfig, StoreSettings } from './types.js';
import { readYaml } from './yaml.js';

export type { ResolvedKey, RotatedSecret } from './keys.js';
export { ConfigError, type ConfigProblem, formatProblem } from './problems.js';

export interface LoadOptions {
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * A config that passed every check, as plain data (structured-clonable): the validation's result.
 * `buildConfig` turns it into the immutable Config the gateway reads, which is cheap.
 */
export interface ResolvedConfig {
  readonly file: string;
  readonly hash: string;
  readonly watchedFiles: readonly string[];
  readonly raw: Omit<RawConfig, 'keys'>;
  readonly keys: readonly ResolvedKey[];
  readonly leads: LeadsConfig;
  /** `state:` with its password file read. */
  readonly state: StoreSettings;
  readonly warnings: readonly ConfigProblem[];
  /** How many warnings there are: `warnings` lists the first {@link MAX_WARNINGS} and one line for the rest. */
  readonly warningCount: number;
}

/**
 * Reads the config file and everything it names, validates it whole and returns the resolved
 * config. Throws ConfigError listing every problem found, each with its file and line. Problems
 * that are not errors (a placeholder secret) come back in `warnings`.
 */
export function loadConfig(configPath: string, options: LoadOptions = {}): Config {
  const resolved = validateConfig(configPath, options);
  return buildConfig(resolved, buildKeys(resolved.keys));
}

/** Everything but building: read, parse, validate, read named files. Throws ConfigError. */
export function validateConfig(configPath: string, options: LoadOptions = {}): ResolvedConfig {
  const env = options.env ?? process.env;
  const file = resolve(configPath);
  const bytes = readBytes(file);
  if (bytes instanceof Error) {
    throw new ConfigError([{ file, line: null, field: '', message: `cannot read: ${bytes.message}` }]);
  }
  const text = bytes.toString('utf8');
  const read = readYaml(file, text);
  if ('problems' in read) throw new ConfigError(read.problems);
  const problems = new ProblemList(file, text);
  const warnings = new ProblemList(file, text);
  // An unset variable is reported once, by name; the checks below still run on the rest.
  const examples = exampleEnvBeside(file);
  const substituted = mayNameVariables(text)
    ? substituteEnv(read.value, text, env, (path, name) =>
        problems.add(path, `environment variable ${name} is not set${examples(name)}`),
      )
    : read.value;
  const value = applyEnvOverrides(substituted, env, (path, message) => problems.add(path, message));
  const parsed = parseConfig(value);
  if (!parsed.success) {
    for (const problem of describeIssues(parsed.error.issues, value, configSchema)) {
      if (!problems.has(problem.path)) problems.add(problem.path, problem.message);
    }
    throw new ConfigError(problems.resolve());
  }
  const { keys: rawKeys, ...raw } = parsed.data;
  const base = dirname(file);
  // Every file this config reads, with what was read (null: missing): the fingerprint's input.
  const watched = new Map<string, Buffer | null>([[file, bytes]]);
  const extra: ConfigProblem[] = [];
  const readNamed = (path: Path, name: string): string | null => {
    const full = resolve(base, name);
    const content = readBytes(full);
    watched.set(full, content instanceof Error ? null : content);
    if (content instanceof Error) {
      problems.add(
        path,
        `cannot read ${full}: ${(content as NodeJS.ErrnoException).code ?? content.message}`,
      );
      return null;
    }
    return content.toString('utf8');
  };
  const keys = resolveKeys(rawKeys, { problems, warnings, readNamed, nowS: Math.floor(Date.now() / 1000) });
  const leads = resolveLeads(parsed.data, base, readNamed, watched, extra);
  const state = storeSettingsOf(raw.state, (field, name) => readNamed(['state', 'redis', field], name));
  checkCertificates(raw, base, { problems, warnings });
  if (problems.size > 0 || extra.length > 0) throw new ConfigError([...problems.resolve(), ...extra]);
  return {
    file,
    hash: fingerprintOf(watched),
    watchedFiles: [...watched.keys()],
    raw,
    keys,
    leads,
    state: state ?? { redis: null },
    warnings: warningsOf(warnings),
    warningCount: warnings.size,
  };
}

/**
 * CONTRACT §11: each listener's certificate pair loads, matches and is in date (else a problem
 * at its `tls:` field naming the file); one that expires within 14 days is a warning. The files
 * are not part of the config's fingerprint: the listener reloads them itself when they change.
 */
function checkCertificates(
  raw: Omit<RawConfig, 'keys'>,
  base: string,
  out: { problems: ProblemList; warnings: ProblemList },
): void {
  const blocks: Array<[Path, { host: string; port: number; tls?: RawConfig['listen']['tls'] }]> = [
    [['listen'], raw.listen],
    [['admin'], raw.admin],
  ];
  if (raw.forward_auth !== undefined) blocks.push([['forward_auth', 'listen'], raw.forward_auth.listen]);
  const nowS = Math.floor(Date.now() / 1000);
  for (const [path, block] of blocks) {
    const tls = listenerSettingsOf(block, base).tls;
    if (tls === null) continue;
    const pair = loadPair(tls, nowS);
    if (!('options' in pair)) {
      out.problems.add([...path, 'tls', pair.field], `${pair.file}: ${pair.message}`);
      continue;
    }
    const warning = certificateExpiryWarning(pair, nowS);
    if (warning !== null) out.warnings.add([...path, 'tls', 'cert_file'], `${tls.certFile}: ${warning}`);
  }
}

/**
 * sha256 over every file a config reads (name and content, or "missing"): two loads with the same
 * fingerprint would build the same config, so a reload compares this before parsing anything.
 */
export function fingerprint(files: readonly string[]): string {
  return fingerprintOf(
    new Map(
      files.map((f) => {
        const content = readBytes(f);
        return [f, content instanceof Error ? null : content];
      }),
    ),
  );
}

/** The fingerprint of files already read (their bytes: a text would be encoded again), in order. */
function fingerprintOf(contents: ReadonlyMap<string, Buffer | null>): string {
  const hash = createHash('sha256');
  for (const [f, content] of contents)
    hash
      .update(`${f}\0`)
      .update(content ?? 'missing')
      .update('\0');
  return hash.digest('hex');
}

/** Adds `keys` to the table (a new one, or one a reload fills batch by batch) and seals it. */
export function buildKeys(keys: readonly ResolvedKey[], into = new KeyTable(keys.length)): KeyTable {
  for (const k of keys) into.add(k);
  into.seal();
  return into;
}

/** The immutable Config, from a resolved config and its built keys. */
export function buildConfig(r: Omit<ResolvedConfig, 'keys'>, keys: KeyTable): Config {
  const raw = r.raw;
  const config: Config = {
    file: r.file,
    hash: r.hash,
    loadedAt: new Date(),
    watchedFiles: r.watchedFiles,
    listen: listenerSettingsOf(raw.listen, dirname(r.file)),
    admin: listenerSettingsOf(raw.admin, dirname(r.file)),
    forwardAuth:
      raw.forward_auth === undefined
        ? null
        : { listen: listenerSettingsOf(raw.forward_auth.listen, dirname(r.file)) },
    tracing: tracingConfigOf(raw.tracing),
    upstream: {
      url: new URL(raw.upstream.url),
      timeoutMs: raw.upstream.timeout_ms,
      connectTimeoutMs: raw.upstream.connect_timeout_ms,
      maxSockets: raw.upstream.max_sockets,
      healthPath: raw.upstream.health_path ?? null,
      engine: raw.upstream.engine,
      underscoreHeaders: raw.upstream.underscore_headers,
    },
    trustedProxies: createIpMatcher(raw.client_ip.trusted_proxies.map(checkedRange)),
    digest: {
      maxSkewS: raw.digest.max_skew_s,
      singleUse: raw.digest.single_use,
      onStoreError: raw.digest.on_store_error,
    },
    workers: raw.workers,
    state: r.state,
    rateLimits: rateLimitsOf(raw.rate_limits),
    leadToken: {
      ttlS: raw.lead_token.ttl_s,
      maxSkewS: raw.lead_token.max_skew_s,
      cacheSize: raw.lead_token.cache_size,
    },
    leads: r.leads,
    cors: { origins: new Set(raw.cors.origins), maxAgeS: raw.cors.max_age_s },
    shutdown: { delayS: raw.shutdown.delay_s, timeoutS: raw.shutdown.timeout_s },
    limits: {
      maxHeaderBytes: raw.limits.max_header_bytes,
      maxHeaderCount: raw.limits.max_header_count,
      maxBodyBytes: raw.limits.max_body_bytes ?? null,
      headerTimeoutMs: raw.limits.header_timeout_ms,
      requestTimeoutMs: raw.limits.request_timeout_ms,
      keepAliveTimeoutMs: raw.limits.keepalive_timeout_ms,
      maxPipelinedRequests: raw.limits.max_pipelined_requests,
      sendTimeoutMs: raw.limits.send_timeout_ms,
      bufferBodyBytes: raw.limits.buffer_body_bytes,
      minBodyRateBps: raw.limits.min_body_rate_bps,
      bodyRateGraceMs: raw.limits.body_rate_grace_ms,
      maxConnections: raw.limits.max_connections,
    },
    log: { requests: raw.log.requests },
    keys,
    warnings: r.warnings,
    warningCount: r.warningCount,
  };
  return deepFreeze(config);
}

function readBytes(file: string): Buffer | Error {
  try {
    return readFileSync(file);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** At most this many warnings are listed one by one; the rest are counted. */
const MAX_WARNINGS = 50;

function warningsOf(list: ProblemList): ConfigProblem[] {
  const all = list.unresolved();
  if (all.length <= MAX_WARNINGS) return all;
  const more = all.length - MAX_WARNINGS;
  return [
    ...all.slice(0, MAX_WARNINGS),
    { file: all[0]?.file ?? '', line: null, field: '', message: `and ${more} more warnings like these` },
  ];
}

function resolveLeads(
  raw: RawConfig,
  base: string,
  readNamed: (path: Path, name: string) => string | null,
  watched: Map<string, Buffer | null>,
  out: ConfigProblem[],
): LeadsConfig {
  const up = raw.leads.upstream;
  if (up) return upstreamLeadsOf(up);
  let name = raw.leads.file;
  if (name === undefined) {
    // The embedded default: leads.yaml beside the config, or no leads at all when there is none.
    const fallback = resolve(base, 'leads.yaml');
    if (!existsSync(fallback)) {
      watched.set(fallback, null);
      return { kind: 'file', file: null, records: [] };
    }
    name = 'leads.yaml';
  }
  const content = readNamed(['leads', 'file'], name);
  if (content === null) return { kind: 'file', file: null, records: [] };
  const file = resolve(base, name);
  const read = readYaml(file, content);
  if ('problems' in read) {
    out.push(...read.problems);
    return { kind: 'file', file, records: [] };
  }
  const problems = new ProblemList(file, content);
  const parsed = leadsFileSchema.safeParse(read.value);
  if (!parsed.success) {
    for (const p of describeIssues(parsed.error.issues, read.value, leadsFileSchema))
      problems.add(p.path, p.message);
  }
  const list = (read.value as { leads?: unknown } | null)?.leads;
  const ids = new Set<string>();
  const customers = new Set<string>();
  (Array.isArray(list) ? (list as Array<Partial<Lead> | null>) : []).forEach((lead, i) => {
    const { _id: id, customer_id: customer } = lead ?? {};
    if (typeof id === 'string' && ids.has(id)) problems.add(['leads', i, '_id'], `duplicate _id "${id}"`);
    if (typeof customer === 'string' && customers.has(customer)) {
      problems.add(['leads', i, 'customer_id'], `duplicate customer_id "${customer}"`);
    }
    if (typeof id === 'string') ids.add(id);
    if (typeof customer === 'string') customers.add(customer);
  });
  out.push(...problems.resolve());
  const records = parsed.success ? (parsed.data.leads as Lead[]) : [];
  return { kind: 'file', file, records };
}

/** Freezes plain objects and arrays all the way down; class instances (KeyObject, URL, Map) are left as they are. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== Array.prototype) return value;
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
