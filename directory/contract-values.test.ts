// The directory's enumerations and search bounds as the contract's tables give them
// (directory-api.md §2 "Enumerations" and §4): a change to one of them fails here.
import { assert } from 'chai';
import { test } from '../test/harness.ts';
import { paramSchema } from './http/params.ts';
import { SEARCH_PARAMS } from './http/schemas.ts';
import { CATEGORIES, CONTACT_KINDS } from './record.ts';

const schemaOf = (name: string): unknown => paramSchema(SEARCH_PARAMS.find((p) => p.name === name)!);

test('directory contract: the eight categories', () => {
  assert.deepEqual(
    [...CATEGORIES],
    ['cnc-machining', 'sheet-metal', 'injection-mould', 'pcba-smt', 'wire-harness', 'surface-finishing', 'assembly', 'inspection'],
  );
});

test('directory contract: the three contact kinds', () => {
  assert.deepEqual([...CONTACT_KINDS], ['website', 'email', 'observed-email']);
});

test('directory contract: the search parameters and their bounds (limit 1 to 100, default 20; offset from 0)', () => {
  // The contract's seven, and region, an optional addition of description version 1.2.0.
  assert.deepEqual(
    SEARCH_PARAMS.map((p) => p.name).filter((name) => name !== 'region'),
    ['q', 'country', 'city', 'category', 'contact', 'limit', 'offset'],
  );
  assert.isFalse(SEARCH_PARAMS.find((p) => p.name === 'region')!.required);
  assert.deepInclude(schemaOf('limit'), { type: 'integer', minimum: 1, maximum: 100, default: 20 });
  assert.deepInclude(schemaOf('offset'), { type: 'integer', minimum: 0, default: 0 });
  assert.deepInclude(schemaOf('country'), { pattern: '^[A-Z]{2}$' });
});
