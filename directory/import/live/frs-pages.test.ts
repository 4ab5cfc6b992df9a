import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { frsPageUrl, normalizeFrsPage } from './frs-pages.ts';

test('an Envirofacts page URL: the NAICS table joined to the facility table, a 0-based inclusive row range, CSV', () => {
  assert.equal(
    frsPageUrl('https://data.epa.gov/efservice/', '332710', 1000, 500),
    'https://data.epa.gov/efservice/FRS_NAICS/NAICS_CODE/332710/FRS_FACILITY_SITE/rows/1000:1499/CSV',
  );
});

test('a page header is read upper-cased and without table qualifiers; the rows stay as they are', () => {
  assert.equal(normalizeFrsPage('registry_id,primary_name\n1,acme inc.\n'), 'REGISTRY_ID,PRIMARY_NAME\n1,acme inc.\n');
  assert.equal(
    normalizeFrsPage('frs_facility_site.registry_id,"frs_naics.naics_code"\r\n1,"x.y"\r\n'),
    'REGISTRY_ID,"NAICS_CODE"\r\n1,"x.y"\r\n',
  );
  assert.equal(normalizeFrsPage(''), '');
});
