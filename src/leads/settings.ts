import type { z } from 'zod';
import type { leadsSchema } from './schema.js';

/** A lead record, as the lookup answers it. */
export interface Lead {
  readonly _id: string;
  readonly customer_id: string;
  readonly [field: string]: unknown;
}

export type LeadsConfig =
  | { readonly kind: 'file'; readonly file: string | null; readonly records: readonly Lead[] }
  | {
      readonly kind: 'upstream';
      readonly path: string;
      readonly byIdPath: string | null;
      readonly cacheTtlMs: number;
      readonly cacheSize: number;
    };

/** The lead resolver's settings from `leads.upstream` as validated (leads/schema.ts). */
export function upstreamLeadsOf(up: NonNullable<z.infer<typeof leadsSchema>['upstream']>): LeadsConfig {
  return {
    kind: 'upstream',
    path: up.path,
    byIdPath: up.by_id_path ?? null,
    cacheTtlMs: up.cache_ttl_s * 1000,
    cacheSize: up.cache_size,
  };
}
