import type { RevocationsHello, RevocationsPush } from '../revocation/index.js';
import type { StoreReply, StoreRequest } from '../store/messages.js';
import type { WorkerMetrics } from './metrics.js';

export { isOurs } from '../store/messages.js';

/** What a worker tells the primary. */
export type FromWorker =
  | { readonly leadgate: 'ready'; readonly apiPort: number; readonly forwardAuthPort: number | null }
  | { readonly leadgate: 'readiness'; readonly notReady: string | null }
  | { readonly leadgate: 'log'; readonly text: string }
  | { readonly leadgate: 'metrics'; readonly id: number; readonly metrics: WorkerMetrics }
  | RevocationsHello
  | StoreRequest;

/** What the primary tells a worker. */
export type FromPrimary =
  | { readonly leadgate: 'drain' }
  | { readonly leadgate: 'reload'; readonly cause: string }
  | { readonly leadgate: 'metrics'; readonly id: number }
  | RevocationsPush
  | StoreReply;
