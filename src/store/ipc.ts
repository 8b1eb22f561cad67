import type { GcraVerdict } from '../gcra/gcra.js';
import type { MemoryStore } from './memory.js';
import { isOurs, type StoreReply, type StoreRequest } from './messages.js';
import { type StateStore, StoreUnavailableError } from './types.js';

/** The worker's side of a pool channel: `process` in a cluster worker. */
export interface WorkerChannel {
  send(message: StoreRequest, callback: (err: Error | null) => void): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/**
 * In a worker pool without Redis: the pod's one memory store lives in the primary, and each
 * worker asks it over the cluster IPC channel, so single use and rate limits hold across workers.
 */
export function createIpcStore(channel: WorkerChannel, epochMs?: number): StateStore {
  let next = 0;
  const pending = new Map<number, (reply: StoreReply) => void>();
  channel.on('message', (message) => {
    if (!isOurs<StoreReply>(message) || message.leadgate !== 'store-reply') return;
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  const ask = (request: StoreRequest) =>
    new Promise<StoreReply>((resolve, reject) => {
      pending.set(request.id, resolve);
      channel.send(request, (err) => {
        if (err === null) return;
        pending.delete(request.id);
        reject(new StoreUnavailableError('the primary process is not reachable'));
      });
    });
  return {
    kind: 'ipc',
    ready: Promise.resolve(),
    ...(epochMs === undefined ? {} : { epochMs }),
    async claimOnce(key, ttlMs, stampedS) {
      const reply = await ask({ leadgate: 'store', id: next++, op: 'claim', key, ttlMs, stampedS });
      if (!('claim' in reply)) throw new StoreUnavailableError('unexpected answer from the primary');
      return reply.claim;
    },
    async spend(key, bucket): Promise<GcraVerdict> {
      const reply = await ask({ leadgate: 'store', id: next++, op: 'spend', key, bucket });
      if (!('verdict' in reply)) throw new StoreUnavailableError('unexpected answer from the primary');
      return reply.verdict;
    },
    async close() {
      pending.clear();
    },
  };
}

/** How a worker learns when the primary's memory store began. */
export const STORE_EPOCH_ENV = 'LEADGATE_STORE_EPOCH_MS';

/** The primary's side: answers a worker's store request from the pod's memory store. */
export function answerStoreRequest(store: MemoryStore, request: StoreRequest): StoreReply {
  return request.op === 'claim'
    ? {
        leadgate: 'store-reply',
        id: request.id,
        claim: store.claimOnceNow(request.key, request.ttlMs, request.stampedS),
      }
    : { leadgate: 'store-reply', id: request.id, verdict: store.spendNow(request.key, request.bucket) };
}
