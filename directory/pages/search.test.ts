// The search page with hostile values in the data: every value a record carries is shown escaped,
// and a link goes out only to an http(s) address (Node and Deno).

import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { serializeDataset } from '../dataset.ts';
import type { FactoryRecord } from '../record.ts';
import { createDirectory } from '../router.ts';
import { MemorySubmissionStore } from '../submissions/store.ts';
import { fixtureDataset, textSource } from '../testing/fixtures.ts';

const HOSTILE = '<img src=x onerror=alert(1)>"\'&';

test('search page: record values are escaped wherever they appear, and only http(s) addresses become links', async () => {
  const fixture = fixtureDataset();
  const base = fixture.records[0]!;
  const hostile: FactoryRecord = {
    ...base,
    id: 'epa-110000000000',
    name: `Hostile ${HOSTILE}`,
    city: HOSTILE,
    region: 'OH',
    address: HOSTILE,
    category_evidence: base.category_evidence.map((e) => ({ ...e, label: HOSTILE, value: HOSTILE })),
    contacts: [
      { kind: 'website', value: 'javascript:alert(1)', source: base.sources[0]!.key },
      { kind: 'observed-email', value: `${HOSTILE}@x.example`, source: base.sources[0]!.key },
    ],
    sources: [{ ...base.sources[0]!, name: HOSTILE, licence: HOSTILE }],
  };
  const text = serializeDataset({ ...fixture, records: [hostile, ...fixture.records] });
  const store = new MemorySubmissionStore();
  const directory = createDirectory({ data: textSource(text), submissions: store });
  try {
    const response = await directory.fetch(new Request('http://x/?q=hostile', { headers: { accept: 'text/html' } }));
    assert.equal(response.status, 200);
    const page = await response.text();
    assert.include(page, '1 record; showing 1–1');
    assert.notInclude(page, '<img');
    assert.notInclude(page, 'href="javascript:');
    assert.include(page, 'Hostile &lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    assert.include(page, 'javascript:alert(1)', 'shown as text');
    // Outside the page's own markup, no tag the data could have opened.
    const body = page.slice(page.indexOf('<main>'));
    assert.notMatch(
      body,
      /<(?!\/?(?:main|h1|h2|form|div|label|input|button|fieldset|legend|select|option|p|span|ol|ul|li|details|summary|dl|dt|dd|a|code|time|br|nav|footer|body|html)\b)/,
    );
  } finally {
    await directory.close();
    await store.close();
  }
});
