import { describe, expect, it } from 'vitest';
import { foldName, nameKind, overrideMethods } from '../../src/auth/header-names.js';

describe('header names as a backend reads them (CONTRACT §10)', () => {
  it('folds case and every character other than a-z0-9', () => {
    for (const n of [
      'X.Lead.Id',
      'X~Lead~Id',
      'X_Lead_Id',
      'XLeadId',
      'x-lead-id!',
      '-x-lead-id',
      "x'lead'id",
    ])
      expect(foldName(n)).toBe('xleadid');
  });

  it.each([
    ['x-lead-id', 'identity'],
    ['X.Lead.Id', 'identity'],
    ['x_request_id', 'identity'],
    ['X~Api~Key~Purpose', 'identity'],
    ['x.apikey', 'credential'],
    ['X-Lead-Token', 'credential'],
    ['x-forwarded.for', 'forwarding'],
    ['.forwarded', 'forwarding'],
    // first characters past 'z' that fold away: no fast answer for them
    ['~x-lead-id', 'identity'],
    ['|x-apikey', 'credential'],
    ['{x-forwarded-for', 'forwarding'],
    ['X-HTTP-Method', 'override'],
    ['x_method_override', 'override'],
    ['accept', null],
    ['x-custom', null],
    ['x-lead-ids', null],
    ['', null],
  ])('%j is %s', (name, kind) => {
    expect(nameKind(name)).toBe(kind);
    expect(nameKind(name)).toBe(kind); // the second answer comes from the cache
  });

  it('lists every method the override headers name: spellings, repeats, comma lists, any case', () => {
    expect(
      overrideMethods({
        'x-http-method-override': 'get, Delete',
        'x.method.override': 'PUT',
        x_http_method: ['PATCH', ' '],
        'x-custom': 'POST',
      }),
    ).toEqual(['GET', 'DELETE', 'PUT', 'PATCH']);
    expect(overrideMethods({ accept: '*/*' })).toEqual([]);
  });
});
