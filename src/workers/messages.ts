import type { Bucket, GcraVerdict } from '../ratelimit/gcra.js';
import type { Claim } from '../store/types.js';

/** What a worker tells the primary. */
export type FromWorker =
  | { readonly leadgate: 'ready'; readonly apiPort: number; readonly forwardAuthPort: number | null }
  | { readonly leadgate: 'readiness'; readonly notReady: string | null }
  | { readonly leadgate: 'log'; readonly text: string }
  | StoreRequest;

/** What the primary tells a worker. */
export type FromPrimary =
  | { readonly leadgate: 'drain' }
  | { readonly leadgate: 'reload'; readonly cause: string }
  | StoreReply;

export type StoreRequest =
  | {
      readonly leadgate: 'store';
      readonly id: number;
      readonly op: 'claim';
      readonly key: string;
      readonly ttlMs: number;
      readonly stampedS: number;
    }
  | {
      readonly leadgate: 'store';
      readonly id: number;
      readonly op: 'spend';
      readonly key: string;
      readonly bucket: Bucket;
    };

export type StoreReply =
  | { readonly leadgate: 'store-reply'; readonly id: number; readonly claim: Claim }
  | { readonly leadgate: 'store-reply'; readonly id: number; readonly verdict: GcraVerdict };

/** Messages of leadgate's own (prom-client's cluster messages share the channel). */
export function isOurs<T extends { leadgate: string }>(message: unknown): message is T {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as { leadgate?: unknown }).leadgate === 'string'
  );
}
