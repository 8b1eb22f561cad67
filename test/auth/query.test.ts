import { describe, expect, it } from 'vitest';
import { queryParam } from '../../src/auth/query.js';

describe('queryParam', () => {
  it.each([
    ['customer_id=c1', { kind: 'one', value: 'c1' }],
    ['a=1&customer_id=gid%3A%2F%2Fshop%2F7&b=2', { kind: 'one', value: 'gid://shop/7' }],
    ['customer_id=kunde+3+%C3%BC', { kind: 'one', value: 'kunde 3 ü' }],
    ['customer_id=a%2Bb', { kind: 'one', value: 'a+b' }],
    ['', { kind: 'absent' }],
    ['other=1', { kind: 'absent' }],
    ['customer_idx=1', { kind: 'absent' }],
    ['customer_id=%FF', { kind: 'invalid', why: 'undecodable' }],
    ['customer_id=%c0%ae', { kind: 'invalid', why: 'undecodable' }],
    ['customer_id=%E2%82', { kind: 'invalid', why: 'undecodable' }],
    ['customer_id=%ZZ', { kind: 'invalid', why: 'undecodable' }],
    ['customer_id=', { kind: 'invalid', why: 'empty' }],
    ['customer_id', { kind: 'invalid', why: 'empty' }],
    ['customer_id=a&customer_id=a', { kind: 'invalid', why: 'repeated' }],
    ['customer%5Fid=a&customer_id=b', { kind: 'invalid', why: 'repeated' }],
  ])('reads %j strictly', (query, expected) => {
    expect(queryParam(query, 'customer_id')).toEqual(expected);
  });
});
