import type { RequestTrace } from '../tracing/index.js';
import type { Lead } from './settings.js';

/** Where the lookup finds leads: a file (the embedded default) or the backend. */
export interface LeadResolver {
  byCustomerId(customerId: string, ctx: LookupContext): Promise<Lead | null>;
  byId(id: string, ctx: LookupContext): Promise<Lead | null>;
  /** Stops timers and drops caches; called when a reload replaces the resolver. */
  close(): void;
}

/** Who asks: sent on to a backend resolver, and part of its cache key. */
export interface LookupContext {
  readonly keyName: string;
  readonly requestId: string;
  /** The request's trace when sampled: a backend call gets its own span, carried on in `traceparent`. */
  readonly trace?: RequestTrace | null;
}
