import { assert } from 'chai';
import fc from 'fast-check';
import { test } from '../test/harness.ts';
import { RecordStore, RecordStoreBuilder } from './record-store.ts';

const encoder = new TextEncoder();

// Any JSON that begins with an id, with strings of every kind: escapes, quotes, backslashes,
// members named like the ones the encoding treats apart (address, url), empty strings.
const recordArb = fc.record({
  id: fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('epa-110001023280', 'wd-Q42', 'cn-000001ef92a0188d0a4a', '', 'x-', 'Q42')),
  name: fc.string({ unit: 'binary' }),
  rest: fc.dictionary(
    fc.oneof(fc.string(), fc.constantFrom('address', 'url', 'value', 'country')),
    fc.oneof(
      fc.jsonValue(),
      fc.constantFrom(
        'https://www.wikidata.org/wiki/Q42',
        'https://x.example/?id=110001023280',
        'Q42',
        'a/b=c-d',
        '"quoted"',
        'back\\slash',
        '-',
        '/',
        '=',
        '',
      ),
    ),
  ),
});

// Written member by member: an object would put integer-like names first.
function jsonOf(r: { id: string; name: string; rest: Record<string, unknown> }): string {
  const members = [['id', r.id], ['name', r.name], ...Object.entries(r.rest)].map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  return `{${members.join(',')}}`;
}

test('RecordStore gives back the very bytes stored, whatever the JSON holds', () => {
  fc.assert(
    fc.property(fc.array(recordArb, { minLength: 1, maxLength: 30 }), (records) => {
      const texts = records.map(jsonOf);
      const builder = new RecordStoreBuilder();
      for (const text of texts) builder.append(encoder.encode(text));
      const store = builder.finish();
      assert.equal(store.size, texts.length);
      texts.forEach((text, i) => {
        assert.equal(store.json(i), text);
        assert.equal(store.byteLengthOf(i), encoder.encode(text).length);
        // Ids are ASCII without escapes (the id patterns); others are not read by id().
        if (/^[\x20-\x7e]*$/.test(records[i]!.id) && !/["\\]/.test(records[i]!.id)) assert.equal(store.id(i), records[i]!.id);
      });
      // Decoded into a larger buffer at an offset, records side by side.
      const out = new Uint8Array(texts.reduce((n, t) => n + encoder.encode(t).length, 3));
      let at = 3;
      for (let i = 0; i < texts.length; i++) at = store.decodeInto(i, out, at);
      assert.equal(new TextDecoder().decode(out.subarray(3)), texts.join(''));
    }),
    { numRuns: 300 },
  );
});

test('RecordStore shares what records repeat and keeps only their own values apart', () => {
  const record = (i: number): string =>
    JSON.stringify({
      id: `epa-${String(110000000000 + i)}`,
      name: `FACILITY ${i}`,
      country: 'US',
      sources: [
        {
          key: 'epa-frs',
          name: 'US EPA Facility Registry Service',
          url: `https://frs.example/detail?p_registry_id=${110000000000 + i}`,
          licence: 'Public domain',
        },
      ],
    });
  const builder = new RecordStoreBuilder();
  let text = 0;
  for (let i = 0; i < 1000; i++) {
    const bytes = encoder.encode(record(i));
    text += bytes.length;
    builder.append(bytes);
  }
  const store = builder.finish();
  assert.equal(store.json(517), record(517));
  assert.isBelow(store.byteLength, text / 3, 'a record costs its own values and a few token numbers');
});

test('RecordStore refuses a record that does not begin with its id, and reorders by permutation', () => {
  const builder = new RecordStoreBuilder();
  assert.throws(() => builder.append(encoder.encode('{"name":"x","id":"wd-Q1"}')), /begin with its id/);
  for (const id of ['wd-Q3', 'wd-Q1', 'wd-Q2']) builder.append(encoder.encode(`{"id":"${id}","name":"n"}`));
  const store = builder.finish().permute(Int32Array.from([1, 2, 0]));
  assert.deepEqual(
    [0, 1, 2].map((i) => store.id(i)),
    ['wd-Q1', 'wd-Q2', 'wd-Q3'],
  );
  assert.instanceOf(store, RecordStore);
  assert.equal(store.json(2), '{"id":"wd-Q3","name":"n"}');
});
