/**
 * A store begins when its gateway starts, and a digest stamped in that same whole second counts
 * as stamped before it (fail closed: 401 stale_timestamp). Tests that start a gateway with single
 * use and send a digest at once wait for the next second first.
 */
export function nextSecond(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1001 - (Date.now() % 1000)));
}
