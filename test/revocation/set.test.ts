import { describe, expect, it } from 'vitest';
import { createRevocationSet } from '../../src/revocation/set.js';
import type { Revocation } from '../../src/revocation/types.js';

const T = 1_800_000_000_500; // unix ms, half-way through a second
const TS = Math.floor(T / 1000);

const key = (name: string, atMs = T): Revocation => ({
  kind: 'key',
  name,
  atMs,
  by: 'ops',
  reason: 'leaked',
  untilMs: null,
});
const lead = (name: string, atMs = T, lifeMs = 3_660_000): Revocation => ({
  kind: 'lead',
  name,
  atMs,
  by: 'ops',
  reason: 'account taken over',
  untilMs: atMs + lifeMs,
});

describe('the revocation set in memory', () => {
  it('revokes nothing before its first snapshot and with an empty one', () => {
    const set = createRevocationSet();
    expect(set.snapshot()).toBeNull();
    expect(set.isKeyRevoked('storefront')).toBe(false);
    expect(set.isLeadTokenRevoked('lead-1', 0, TS)).toBe(false);
    set.apply({ version: 'v0', entries: [] });
    expect(set.isKeyRevoked('storefront')).toBe(false);
    expect(set.counts(T)).toEqual({ key: 0, lead: 0 });
  });

  it('refuses a revoked key by name, and only that key', () => {
    const set = createRevocationSet();
    set.apply({ version: 'v1', entries: [key('storefront')] });
    expect(set.isKeyRevoked('storefront')).toBe(true);
    expect(set.isKeyRevoked('server')).toBe(false);
    expect(set.isKeyRevoked('Storefront')).toBe(false);
  });

  it("refuses a lead's tokens issued at or before the revocation's second, and none issued after", () => {
    const set = createRevocationSet();
    set.apply({ version: 'v1', entries: [lead('lead-1')] });
    expect(set.isLeadTokenRevoked('lead-1', TS - 3000, TS + 1)).toBe(true);
    expect(set.isLeadTokenRevoked('lead-1', TS, TS + 1)).toBe(true);
    expect(set.isLeadTokenRevoked('lead-1', TS + 1, TS + 1)).toBe(false);
    expect(set.isLeadTokenRevoked('lead-2', TS - 10, TS + 1)).toBe(false);
  });

  it('lets a lead revocation lapse at its until: nothing it covers can still be valid', () => {
    const set = createRevocationSet();
    set.apply({ version: 'v1', entries: [lead('lead-1', T, 10_000)] });
    const untilS = Math.ceil((T + 10_000) / 1000);
    expect(set.isLeadTokenRevoked('lead-1', TS, untilS - 1)).toBe(true);
    expect(set.isLeadTokenRevoked('lead-1', TS, untilS)).toBe(false);
    expect(set.counts(T + 9_999)).toEqual({ key: 0, lead: 1 });
    expect(set.counts(T + 10_000)).toEqual({ key: 0, lead: 0 });
  });

  it('says what each new snapshot added and removed, and replaces the set whole', () => {
    const set = createRevocationSet();
    const first = set.apply({ version: 'v1', entries: [key('a'), lead('lead-1')] });
    expect(first.added.map((r) => r.name)).toEqual(['a', 'lead-1']);
    expect(first.removed).toEqual([]);
    // lead-1 revoked again later (a new T): one removed, one added
    const second = set.apply({ version: 'v2', entries: [key('a'), lead('lead-1', T + 5_000)] });
    expect(second.added.map((r) => r.atMs)).toEqual([T + 5_000]);
    expect(second.removed.map((r) => r.atMs)).toEqual([T]);
    expect(set.isLeadTokenRevoked('lead-1', TS + 3, TS + 6)).toBe(true);
    const third = set.apply({ version: 'v3', entries: [] });
    expect(third.removed.map((r) => r.name).sort()).toEqual(['a', 'lead-1']);
    expect(set.isKeyRevoked('a')).toBe(false);
    expect(set.snapshot()?.version).toBe('v3');
  });

  it('answers from 10,000 leads and 1,000 keys', () => {
    const set = createRevocationSet();
    const entries: Revocation[] = [];
    for (let i = 0; i < 10_000; i++) entries.push(lead(`lead-${i}`));
    for (let i = 0; i < 1_000; i++) entries.push(key(`key-${i}`));
    set.apply({ version: 'big', entries });
    expect(set.counts(T)).toEqual({ key: 1_000, lead: 10_000 });
    expect(set.isLeadTokenRevoked('lead-9999', TS, TS)).toBe(true);
    expect(set.isLeadTokenRevoked('lead-10000', TS, TS)).toBe(false);
    expect(set.isKeyRevoked('key-999')).toBe(true);
  });
});
