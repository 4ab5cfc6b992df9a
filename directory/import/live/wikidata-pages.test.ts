import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { industriesQuery, queryTimedOut, readIndustries, wikidataQuery } from './wikidata-pages.ts';

test('Wikidata: the label REGEX runs once over the distinct industries; pages name them in VALUES, in a total order', () => {
  assert.match(industriesQuery(), /^SELECT DISTINCT \?industry WHERE \{\n {2}\{ SELECT DISTINCT \?industry WHERE \{ \?company wdt:P452 \?industry \. \} \}/);
  const page = wikidataQuery(['Q1', 'Q22'], 500, 1000);
  assert.include(page, 'VALUES ?industry { wd:Q1 wd:Q22 }');
  assert.notInclude(page, 'REGEX');
  assert.include(page, 'wikibase:language "en,mul"');
  assert.match(page, /\nORDER BY \?item \?industry \?country \?countryCode \?city \?regionCode \?website \?modified\nLIMIT 500\nOFFSET 1000$/);
});

test('Wikidata: the industries are read as sorted unique Q-ids; a time-out is recognised by its exception', () => {
  const answer = JSON.stringify({
    head: { vars: ['industry'] },
    results: {
      bindings: [
        { industry: { type: 'uri', value: 'http://www.wikidata.org/entity/Q9' } },
        { industry: { type: 'uri', value: 'http://www.wikidata.org/entity/Q10' } },
        { industry: { type: 'uri', value: 'http://www.wikidata.org/entity/Q9' } },
      ],
    },
  });
  assert.deepEqual(readIndustries(answer), ['Q10', 'Q9']);
  assert.throws(() => readIndustries('{"head":{}}'), /not SPARQL JSON/);
  assert.throws(() => readIndustries('<html>'));
  assert.match(queryTimedOut(500, 'java.util.concurrent.TimeoutException') ?? '', /time limit/);
  assert.isUndefined(queryTimedOut(500, 'Internal Server Error'));
  assert.isUndefined(queryTimedOut(503, 'java.util.concurrent.TimeoutException'));
});
