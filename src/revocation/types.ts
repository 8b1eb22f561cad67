/** One revocation in force: a key refused everywhere, or a lead's tokens issued until `atMs`. */
export interface Revocation {
  readonly kind: 'key' | 'lead';
  /** The key's name, or the lead id. */
  readonly name: string;
  /** When it was stored (the store's clock, unix ms). */
  readonly atMs: number;
  /** Who revoked it (`--by`, else the user name of who ran the command). */
  readonly by: string;
  readonly reason: string;
  /** A lead's: when no token it covers can still be valid, and it removes itself; a key's: null. */
  readonly untilMs: number | null;
}

/** The whole set as the store held it at one moment. */
export interface Snapshot {
  /** Changes with every write to the set (a store that lost its data starts a new one). */
  readonly version: string;
  readonly entries: readonly Revocation[];
}

/** What the request path reads: plain lookups in memory, never a store call. */
export interface RevocationCheck {
  isKeyRevoked(name: string): boolean;
  /** A lead token for `leadId` issued at `iatS` is covered by a revocation in force at `nowS`. */
  isLeadTokenRevoked(leadId: string, iatS: number, nowS: number): boolean;
}
