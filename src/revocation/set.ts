import type { Revocation, RevocationCheck, Snapshot } from './types.js';

interface LeadCut {
  /** Tokens issued at or before this second are refused. */
  readonly atS: number;
  /** Past this second the revocation no longer counts (nothing it covers is still valid). */
  readonly untilS: number;
}

export interface Change {
  readonly added: readonly Revocation[];
  readonly removed: readonly Revocation[];
}

export interface RevocationSet extends RevocationCheck {
  /** Replaces the whole set; says what came and went. */
  apply(snapshot: Snapshot): Change;
  /** The set last applied, or null before the first. */
  snapshot(): Snapshot | null;
  /** How many are in force at `nowMs`, by kind. */
  counts(nowMs: number): { key: number; lead: number };
}

const identity = (r: Revocation) => `${r.kind}\u0000${r.name}\u0000${r.atMs}`;

/**
 * The revocations in memory, swapped whole on every change: a key's name in a Set, a lead's cut
 * in a Map. The reads are one lookup each, and none at all while the set is empty.
 */
export function createRevocationSet(): RevocationSet {
  let current: Snapshot | null = null;
  let keys = new Set<string>();
  let leads = new Map<string, LeadCut>();
  return {
    isKeyRevoked: (name) => keys.size !== 0 && keys.has(name),
    isLeadTokenRevoked(leadId, iatS, nowS) {
      if (leads.size === 0) return false;
      const cut = leads.get(leadId);
      return cut !== undefined && iatS <= cut.atS && nowS < cut.untilS;
    },
    apply(snapshot) {
      const before = new Map((current?.entries ?? []).map((r) => [identity(r), r]));
      const after = new Map(snapshot.entries.map((r) => [identity(r), r]));
      const nextKeys = new Set<string>();
      const nextLeads = new Map<string, LeadCut>();
      for (const r of snapshot.entries) {
        if (r.kind === 'key') nextKeys.add(r.name);
        else {
          nextLeads.set(r.name, {
            atS: Math.floor(r.atMs / 1000),
            untilS: r.untilMs === null ? Number.POSITIVE_INFINITY : Math.ceil(r.untilMs / 1000),
          });
        }
      }
      keys = nextKeys;
      leads = nextLeads;
      current = snapshot;
      return {
        added: snapshot.entries.filter((r) => !before.has(identity(r))),
        removed: [...before.values()].filter((r) => !after.has(identity(r))),
      };
    },
    snapshot: () => current,
    counts(nowMs) {
      let lead = 0;
      for (const r of current?.entries ?? []) {
        if (r.kind === 'lead' && (r.untilMs === null || nowMs < r.untilMs)) lead++;
      }
      return { key: keys.size, lead };
    },
  };
}
