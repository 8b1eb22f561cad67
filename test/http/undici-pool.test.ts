import { Pool as IndexPool } from 'undici';
import { describe, expect, it } from 'vitest';
import { Pool } from '../../src/http/undici-pool.js';

describe('undici Pool loaded alone', () => {
  it('is the Pool that undici exports', () => {
    expect(Pool).toBe(IndexPool);
  });
});
