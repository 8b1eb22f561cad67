import type { Snapshot } from './types.js';

/** A worker asks the pool's primary for the set (once, as it starts). */
export interface RevocationsHello {
  readonly leadgate: 'revocations-hello';
}

/** The primary sends the whole set: in answer, and to every worker on each change. */
export interface RevocationsPush {
  readonly leadgate: 'revocations';
  readonly snapshot: Snapshot;
}
