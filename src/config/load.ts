import { createHash, createSecretKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type Document, LineCounter, parseDocument, visit } from 'yaml';
import { createIpMatcher, parseRange, type Range } from '../net/ip.js';
import { configSchema, leadsFileSchema, type RawConfig, type RawKey } from './schema.js';
import type { ApiKey, Config, Lead, LeadsConfig } from './types.js';

/** One problem of a config, placed at a file and line so an operator can go straight to it. */
export interface ConfigProblem {
  readonly file: string;
  readonly line: number | null;
  readonly field: string;
  readonly message: string;
}

export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function formatProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}`;
  return p.field ? `${where}: ${p.field}: ${p.message}` : `${where}: ${p.message}`;
}

type Path = ReadonlyArray<string | number>;

/** A parsed YAML file that can say on which line a value stands. */
class YamlSource {
  readonly doc: Document.Parsed;
  private readonly lines = new LineCounter();
  readonly problems: ConfigProblem[] = [];

  constructor(
    readonly file: string,
    text: string,
  ) {
    this.doc = parseDocument(text, { lineCounter: this.lines, prettyErrors: false, uniqueKeys: true });
    for (const err of this.doc.errors) {
      this.problems.push({
        file,
        line: this.lines.linePos(err.pos[0]).line,
        field: '',
        message: err.message.split('\n')[0] ?? 'YAML syntax error',
      });
    }
  }

  lineOf(path: Path): number | null {
    for (let n = path.length; n >= 0; n--) {
      const node = this.doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) return this.lines.linePos(node.range[0]).line;
      if (n === 0) break;
    }
    return null;
  }

  problem(path: Path, message: string): void {
    this.problems.push({ file: this.file, line: this.lineOf(path), field: path.join('.'), message });
  }

  /** Replaces `${NAME}` in every string scalar from `env`; an unset variable is a problem named. */
  substituteEnv(env: NodeJS.ProcessEnv): void {
    visit(this.doc, {
      Scalar: (_key, node) => {
        if (typeof node.value !== 'string' || !node.value.includes('${')) return;
        node.value = node.value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
          const value = env[name];
          if (value === undefined) {
            const line = node.range ? this.lines.linePos(node.range[0]).line : null;
            this.problems.push({
              file: this.file,
              line,
              field: '',
              message: `environment variable ${name} is not set`,
            });
            return '';
          }
          return value;
        });
      },
    });
  }
}

function readText(file: string): string | Error {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

function sha256Hex(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface LoadOptions {
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Reads the config file and everything it names, validates it whole and returns the resolved
 * config. Throws ConfigError listing every problem found, each with its file and line.
 */
export function loadConfig(configPath: string, options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const file = resolve(configPath);
  const text = readText(file);
  if (text instanceof Error) {
    throw new ConfigError([{ file, line: null, field: '', message: `cannot read: ${text.message}` }]);
  }
  const src = new YamlSource(file, text);
  if (src.problems.length > 0) throw new ConfigError(src.problems);
  src.substituteEnv(env);
  // An unset variable would only cascade into "too short" and "required" noise below.
  if (src.problems.length > 0) throw new ConfigError(src.problems);

  const parsed = configSchema.safeParse(src.doc.toJS());
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      src.problem(
        issue.path.filter((p): p is string | number => typeof p !== 'symbol'),
        issue.message,
      );
    }
    throw new ConfigError(src.problems);
  }
  const raw = parsed.data;
  const base = dirname(file);
  const hash = createHash('sha256').update(text);
  const watched = new Set<string>([file]);

  const readNamed = (path: Path, name: string): string | null => {
    const full = resolve(base, name);
    watched.add(full);
    const content = readText(full);
    if (content instanceof Error) {
      src.problem(path, `cannot read ${full}: ${(content as NodeJS.ErrnoException).code ?? content.message}`);
      return null;
    }
    hash.update(content);
    return content;
  };

  const ranges = (path: Path, list: readonly string[]): Range[] => {
    const out: Range[] = [];
    list.forEach((entry, i) => {
      const range = parseRange(entry);
      if (typeof range === 'string') src.problem([...path, i], range);
      else out.push(range);
    });
    return out;
  };

  const keys = resolveKeys(raw.keys, src, readNamed, ranges);
  const trustedProxies = createIpMatcher(
    ranges(['client_ip', 'trusted_proxies'], raw.client_ip.trusted_proxies),
  );
  const leads = resolveLeads(raw, base, src, readNamed, watched);

  if (src.problems.length > 0) throw new ConfigError(src.problems);

  const config: Config = {
    file,
    hash: hash.digest('hex'),
    loadedAt: new Date(),
    watchedFiles: [...watched],
    listen: raw.listen,
    admin: raw.admin,
    upstream: {
      url: new URL(raw.upstream.url),
      timeoutMs: raw.upstream.timeout_ms,
      connectTimeoutMs: raw.upstream.connect_timeout_ms,
      maxSockets: raw.upstream.max_sockets,
      healthPath: raw.upstream.health_path ?? null,
      engine: raw.upstream.engine,
      underscoreHeaders: raw.upstream.underscore_headers,
    },
    trustedProxies,
    digest: { maxSkewS: raw.digest.max_skew_s, singleUse: raw.digest.single_use },
    leadToken: {
      ttlS: raw.lead_token.ttl_s,
      maxSkewS: raw.lead_token.max_skew_s,
      cacheSize: raw.lead_token.cache_size,
    },
    leads,
    cors: { origins: new Set(raw.cors.origins), maxAgeS: raw.cors.max_age_s },
    shutdown: { delayS: raw.shutdown.delay_s, timeoutS: raw.shutdown.timeout_s },
    limits: {
      maxHeaderBytes: raw.limits.max_header_bytes,
      maxHeaderCount: raw.limits.max_header_count,
      maxBodyBytes: raw.limits.max_body_bytes ?? null,
      headerTimeoutMs: raw.limits.header_timeout_ms,
      requestTimeoutMs: raw.limits.request_timeout_ms,
      keepAliveTimeoutMs: raw.limits.keepalive_timeout_ms,
    },
    log: { requests: raw.log.requests },
    keys,
  };
  return deepFreeze(config);
}

function resolveKeys(
  rawKeys: readonly RawKey[],
  src: YamlSource,
  readNamed: (path: Path, name: string) => string | null,
  ranges: (path: Path, list: readonly string[]) => Range[],
): Map<string, ApiKey> {
  const keys = new Map<string, ApiKey>();
  const names = new Set<string>();
  rawKeys.forEach((k, i) => {
    const at = (...rest: Array<string | number>): Path => ['keys', i, ...rest];
    if (names.has(k.name)) src.problem(at('name'), `duplicate key name "${k.name}"`);
    names.add(k.name);

    const digest = k.key !== undefined ? sha256Hex(k.key) : (k.key_sha256 ?? '').toLowerCase();
    if (keys.has(digest)) {
      src.problem(
        at(k.key !== undefined ? 'key' : 'key_sha256'),
        `key "${k.name}" has the same value as another key`,
      );
    }

    let secretText = k.signing_secret ?? null;
    if (k.signing_secret_file !== undefined) {
      const content = readNamed(at('signing_secret_file'), k.signing_secret_file);
      secretText = content === null ? null : content.replace(/\r?\n$/, '');
      if (secretText !== null && secretText.length < 16) {
        src.problem(at('signing_secret_file'), 'a signing secret must have at least 16 characters');
        secretText = null;
      }
    }
    const origins = k.origin_ips ? createIpMatcher(ranges(at('origin_ips'), k.origin_ips)) : null;
    if (secretText === null) return;
    keys.set(digest, {
      name: k.name,
      sha256: digest,
      access: k.access_type,
      purpose: k.purpose ?? null,
      secret: createSecretKey(Buffer.from(secretText, 'utf8')),
      origins,
      corsOrigins: k.cors_origins ? new Set(k.cors_origins) : null,
      needsLead: k.access_type === 'READ' && k.purpose === 'STOREFRONT',
    });
  });
  return keys;
}

function resolveLeads(
  raw: RawConfig,
  base: string,
  src: YamlSource,
  readNamed: (path: Path, name: string) => string | null,
  watched: Set<string>,
): LeadsConfig {
  const up = raw.leads.upstream;
  if (up) {
    return {
      kind: 'upstream',
      path: up.path,
      byIdPath: up.by_id_path ?? null,
      cacheTtlMs: up.cache_ttl_s * 1000,
      cacheSize: up.cache_size,
    };
  }
  let name = raw.leads.file;
  if (name === undefined) {
    // The embedded default: leads.yaml beside the config, or no leads at all when there is none.
    const fallback = resolve(base, 'leads.yaml');
    watched.add(fallback);
    if (!existsSync(fallback)) return { kind: 'file', file: null, records: [] };
    name = 'leads.yaml';
  }
  const content = readNamed(['leads', 'file'], name);
  if (content === null) return { kind: 'file', file: null, records: [] };
  const leadsSrc = new YamlSource(resolve(base, name), content);
  const rawLeads: unknown = leadsSrc.problems.length === 0 ? leadsSrc.doc.toJS() : null;
  const parsed = rawLeads === null ? null : leadsFileSchema.safeParse(rawLeads);
  if (parsed && !parsed.success) {
    for (const issue of parsed.error.issues) {
      leadsSrc.problem(
        issue.path.filter((p): p is string | number => typeof p !== 'symbol'),
        issue.message,
      );
    }
  }
  const list = (rawLeads as { leads?: unknown } | null)?.leads;
  const ids = new Set<string>();
  const customers = new Set<string>();
  (Array.isArray(list) ? (list as Array<Partial<Lead> | null>) : []).forEach((lead, i) => {
    const { _id: id, customer_id: customer } = lead ?? {};
    if (typeof id === 'string' && ids.has(id)) leadsSrc.problem(['leads', i, '_id'], `duplicate _id "${id}"`);
    if (typeof customer === 'string' && customers.has(customer)) {
      leadsSrc.problem(['leads', i, 'customer_id'], `duplicate customer_id "${customer}"`);
    }
    if (typeof id === 'string') ids.add(id);
    if (typeof customer === 'string') customers.add(customer);
  });
  const records = parsed?.success ? (parsed.data.leads as Lead[]) : [];
  src.problems.push(...leadsSrc.problems);
  return { kind: 'file', file: resolve(base, name), records };
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
