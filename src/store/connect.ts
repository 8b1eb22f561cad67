import { linkToCluster } from './cluster.js';
import { linkToUrl, type RedisLink } from './link.js';
import { linkToSentinel } from './sentinel.js';
import type { RedisSettings } from './settings.js';

/**
 * The one way `state.redis` becomes a connected Redis link, whatever its shape: one Redis by
 * `url`, the master Sentinel names now, or a Redis Cluster. Every user of the shared store (single
 * use, rate limits, revocation) opens its connection here; calls on a cluster go to the master
 * serving their keys' slot (a script's keys must share one hash tag). `onError` gets connection
 * errors without a URL or a password.
 */
export function openRedisLink(redis: RedisSettings, onError: (reason: string) => void): RedisLink {
  const options = { password: redis.password, connectTimeoutMs: Math.max(redis.timeoutMs, 1_000), onError };
  const target = redis.target;
  switch (target.kind) {
    case 'url':
      return linkToUrl(target.url, options);
    case 'sentinel':
      return linkToSentinel(target, options);
    case 'cluster':
      return linkToCluster(target, options);
  }
}
