import type { Bucket, GcraVerdict } from '../gcra/gcra.js';
import type { Claim } from './types.js';

/** The store's own messages over a pool's IPC channel (workers/messages.ts carries them). */
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
