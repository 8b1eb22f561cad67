import type { Agent } from 'node:http';
import { type Admit, createAdmission } from './admission/index.js';
import type { RequestFacts } from './auth/facts.js';
import { createPipeline, type PipelineResult } from './auth/pipeline.js';
import type { Config } from './config/types.js';
import { type CorsPolicy, createCorsPolicy } from './cors/cors.js';
import { createFileResolver } from './leads/file.js';
import type { LeadResolver } from './leads/resolver.js';
import { createUpstreamResolver } from './leads/upstream.js';
import type { Logger } from './observability/log.js';
import type { Metrics } from './observability/metrics.js';
import type { RevocationCheck } from './revocation/index.js';
import type { OpenedStore } from './store/index.js';

/**
 * A generation of the gateway: everything a request reads, built from one config. A reload builds
 * the next generation off to the side and swaps it in one assignment; a request keeps the
 * generation it started with to its end.
 */
export interface Generation {
  readonly config: Config;
  readonly authenticate: (facts: RequestFacts) => PipelineResult;
  /** After §3: single use and rate limits; null when the config has neither. */
  readonly admit: Admit | null;
  readonly resolver: LeadResolver;
  readonly cors: CorsPolicy;
}

/** What lives across reloads: the upstream agent, the state store, the revocations, metrics, logs. */
export interface SharedDeps {
  readonly agent: Agent;
  /** The state store (single use, rate limits) and, beside a shared one, the local fallback. */
  readonly stores: OpenedStore;
  readonly revocations: RevocationCheck;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** The generation one config makes (the start's, then each reload's). */
export function buildGeneration(config: Config, shared: SharedDeps): Generation {
  const leads = config.leads;
  const resolver =
    leads.kind === 'file'
      ? createFileResolver(leads.records)
      : createUpstreamResolver({
          base: config.upstream.url,
          path: leads.path,
          byIdPath: leads.byIdPath,
          timeoutMs: config.upstream.timeoutMs,
          cacheTtlMs: leads.cacheTtlMs,
          cacheSize: leads.cacheSize,
          agent: shared.agent,
          onCache: (result) => shared.metrics.leadCache.inc({ result }),
          onCall: (seconds) => shared.metrics.upstreamDuration.observe('lookup', seconds),
          onError: (message) => shared.logger.error({ component: 'leads' }, message),
        });
  return {
    config,
    authenticate: createPipeline(config, shared.revocations),
    admit: createAdmission(config, {
      ...shared.stores,
      limited: (policy, key) => shared.metrics.rateLimited.inc({ policy, key }),
      fallback: (use, action) => shared.metrics.storeFallbacks.inc({ use, action }),
    }),
    resolver,
    cors: createCorsPolicy(config),
  };
}
