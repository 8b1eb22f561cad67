import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, type Expiring } from '../../src/http/deadlines.js';

/** An item that records when (on the fake clock) it expired. */
function item(log: Array<[string, number]>, name: string): Expiring {
  return { expire: () => log.push([name, Date.now()]) };
}

describe('deadlines of one length (the upstream header wait)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires each entry at its own deadline, in order, not before', () => {
    const log: Array<[string, number]> = [];
    const list = new Deadlines(1000, () => Date.now());
    list.add(item(log, 'a'));
    vi.advanceTimersByTime(300);
    list.add(item(log, 'b'));
    vi.advanceTimersByTime(699);
    expect(log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(log).toEqual([['a', 1000]]);
    vi.advanceTimersByTime(299);
    expect(log).toEqual([['a', 1000]]);
    vi.advanceTimersByTime(1);
    expect(log).toEqual([
      ['a', 1000],
      ['b', 1300],
    ]);
    expect(list.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never expires a removed entry, and the next one still expires on time', () => {
    const log: Array<[string, number]> = [];
    const list = new Deadlines(1000, () => Date.now());
    const a = list.add(item(log, 'a'));
    vi.advanceTimersByTime(500);
    list.add(item(log, 'b'));
    list.remove(a);
    list.remove(a);
    expect(list.size).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(log).toEqual([['b', 1500]]);
  });

  it('leaves no timer behind once every entry is removed (nothing keeps the process up)', () => {
    const list = new Deadlines(30_000, () => Date.now());
    const entries = Array.from({ length: 5 }, () => list.add({ expire: () => expect.fail('expired') }));
    expect(vi.getTimerCount()).toBe(1);
    for (const e of entries.reverse()) list.remove(e);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(60_000);
  });

  it('expires every entry that is due at once when the timer wakes late', () => {
    const log: Array<[string, number]> = [];
    let clock = 0;
    const list = new Deadlines(100, () => clock);
    list.add(item(log, 'a'));
    clock = 50;
    list.add(item(log, 'b'));
    clock = 400; // the event loop was busy past both deadlines
    vi.advanceTimersByTime(100);
    expect(log.map(([name]) => name)).toEqual(['a', 'b']);
    expect(vi.getTimerCount()).toBe(0);
  });
});
