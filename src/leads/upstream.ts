import http, { type Agent } from 'node:http';
import https from 'node:https';
import { LRUCache } from 'lru-cache';
import { GatewayError } from '../contract/errors.js';
import { isValidLeadId, LEAD_ID_RULE } from '../contract/lead-id.js';
import type { LeadResolver, LookupContext } from './resolver.js';
import type { Lead } from './settings.js';

export interface UpstreamResolverOptions {
  readonly base: URL;
  readonly path: string;
  readonly byIdPath: string | null;
  readonly timeoutMs: number;
  readonly cacheTtlMs: number;
  readonly cacheSize: number;
  readonly agent: Agent;
  readonly onCache?: (result: 'hit' | 'miss') => void;
  /** A call the backend answered (whatever its status): from sending to its response headers. */
  readonly onCall?: (seconds: number) => void;
  readonly onError?: (message: string) => void;
}

interface Entry {
  readonly lead: Lead | null;
}

const MAX_ANSWER_BYTES = 1 << 20;

/**
 * Asks the backend for a lead, over the same keep-alive agent as forwarding. Answers, found and
 * not found alike, are kept in a bounded LRU for `cacheTtlMs`; concurrent asks for one lead share
 * one backend call. Failures are not cached: down → 502, slow → 504, malformed → 502.
 */
export function createUpstreamResolver(options: UpstreamResolverOptions): LeadResolver {
  const client = options.base.protocol === 'https:' ? https : http;
  const cache = new LRUCache<string, Entry, LookupContext & { url: string }>({
    max: options.cacheSize,
    ttl: Math.max(options.cacheTtlMs, 1),
    fetchMethod: async (_key, _stale, { context }) => {
      options.onCache?.('miss');
      return { lead: await fetchLead(context.url, context) };
    },
  });

  const fetchLead = (url: string, ctx: LookupContext): Promise<Lead | null> =>
    new Promise((resolve, reject) => {
      const target = new URL(url, options.base);
      const call = ctx.trace?.call('GET lead resolver', 'GET', target) ?? null;
      const t0 = process.hrtime.bigint();
      const req = client.request(target, {
        method: 'GET',
        agent: options.agent,
        headers: {
          accept: 'application/json',
          'x-api-key-name': ctx.keyName,
          'x-request-id': ctx.requestId,
          ...call?.headers,
        },
      });
      const timer = setTimeout(() => {
        req.destroy(new GatewayError('upstream_timeout', 'the lead backend did not answer in time'));
      }, options.timeoutMs);
      req.on('error', (err) => {
        clearTimeout(timer);
        call?.end();
        if (err instanceof GatewayError) return reject(err);
        options.onError?.(`lead backend unreachable: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
        reject(new GatewayError('upstream_unavailable', 'the lead backend is unavailable'));
      });
      req.on('response', (res) => {
        options.onCall?.(Number(process.hrtime.bigint() - t0) / 1e9);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) {
            req.destroy(new Error('lead backend answer too large'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', () => {});
        res.on('end', () => {
          clearTimeout(timer);
          call?.end(res.statusCode);
          if (res.statusCode === 404) return resolve(null);
          const bad = (why: string) => {
            options.onError?.(`lead backend answer refused: ${why}`);
            reject(new GatewayError('upstream_unavailable', 'the lead backend gave an unusable answer'));
          };
          if (res.statusCode !== 200) return bad(`status ${res.statusCode}`);
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return bad('malformed JSON');
          }
          const record = body as Record<string, unknown> | null;
          if (record === null || typeof record !== 'object' || typeof record._id !== 'string') {
            return bad('no string _id in the JSON answer');
          }
          if (!isValidLeadId(record._id)) return bad(`the _id is not a valid lead id (${LEAD_ID_RULE})`);
          resolve({ ...record, _id: record._id, customer_id: String(record.customer_id ?? '') } as Lead);
        });
      });
      req.end();
    });

  const lookup = async (cacheKey: string, url: string, ctx: LookupContext): Promise<Lead | null> => {
    if (cache.has(cacheKey)) options.onCache?.('hit');
    const entry = await cache.fetch(cacheKey, { context: { ...ctx, url } });
    return entry?.lead ?? null;
  };

  return {
    async byCustomerId(customerId, ctx) {
      const url = options.path.replaceAll('{customer_id}', encodeURIComponent(customerId));
      const lead = await lookup(`${ctx.keyName}\0c\0${customerId}`, url, ctx);
      return lead && lead.customer_id === '' ? { ...lead, customer_id: customerId } : lead;
    },
    async byId(id, ctx) {
      if (options.byIdPath === null) return null;
      const url = options.byIdPath.replaceAll('{id}', encodeURIComponent(id));
      return lookup(`${ctx.keyName}\0i\0${id}`, url, ctx);
    },
    close() {
      cache.clear();
    },
  };
}
