import type { Agent } from 'node:http';
import { createPipeline, type PipelineResult, type RequestFacts } from './auth/pipeline.js';
import type { ReplayStore } from './auth/replay.js';
import type { Config } from './config/types.js';
import { type CorsPolicy, createCorsPolicy } from './http/cors.js';
import { createFileResolver } from './leads/file.js';
import type { LeadResolver } from './leads/resolver.js';
import { createUpstreamResolver } from './leads/upstream.js';
import type { Logger } from './observability/log.js';
import type { Metrics } from './observability/metrics.js';

/**
 * Everything a request reads, built from one config. A reload builds a new one off to the side
 * and swaps it in one assignment; a request keeps the state it started with.
 */
export interface GatewayState {
  readonly config: Config;
  readonly authenticate: (facts: RequestFacts) => PipelineResult;
  readonly resolver: LeadResolver;
  readonly cors: CorsPolicy;
}

/** What lives across reloads: the upstream agent, the digest replay memory, metrics, logs. */
export interface SharedDeps {
  readonly agent: Agent;
  readonly replay: ReplayStore;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export function buildState(config: Config, shared: SharedDeps): GatewayState {
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
          onError: (message) => shared.logger.error({ component: 'leads' }, message),
        });
  return {
    config,
    authenticate: createPipeline(config, config.digest.singleUse ? shared.replay : null),
    resolver,
    cors: createCorsPolicy(config),
  };
}
