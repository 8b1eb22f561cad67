import { describe, expect, it } from 'vitest';
import { serialOf, storeBeganAgain } from '../../src/revocation/store.js';

describe('telling an unrevoke from a store that began again, by the version alone', () => {
  it("reads a version's serial", () => {
    expect(serialOf('1764362312345.7')).toBe(7);
    expect(serialOf('')).toBeNull();
    expect(serialOf('none')).toBeNull();
    expect(serialOf('1764362312345.x')).toBeNull();
  });

  it('a newer version with a larger serial is a write (an unrevoke that emptied the set included)', () => {
    expect(storeBeganAgain('1000.4', '2000.5')).toBe(false);
    expect(storeBeganAgain('1000.4', '1000.4')).toBe(false);
  });

  it('a version gone, or one counting from 1 again, is a store that lost its data', () => {
    expect(storeBeganAgain('1000.4', '')).toBe(true);
    expect(storeBeganAgain('1000.4', '3000.1')).toBe(true);
    expect(storeBeganAgain('1000.4', '3000.4')).toBe(true);
  });

  it('a gateway that held no version (a store never written, no state.redis) has nothing to restore', () => {
    expect(storeBeganAgain('', '')).toBe(false);
    expect(storeBeganAgain('none', '')).toBe(false);
    expect(storeBeganAgain('', '3000.1')).toBe(false);
  });
});
