import { assert } from 'chai';
import { test } from '../../../test/harness.ts';
import { frsPageUrl, normalizeFrsPage } from './frs-pages.ts';

test('an Envirofacts page URL: FRS_NAICS by code joined to the program facility on the program keys, rows from 1, sorted, CSV', () => {
  assert.equal(
    frsPageUrl('https://data.epa.gov/efservice/', '332710', 1000, 500),
    'https://data.epa.gov/efservice/frs.frs_naics/naics_code/equals/332710' +
      '/join/frs.frs_program_facility/pgm_sys_acrnm/equals/pgm_sys_acrnm/and/pgm_sys_id/equals/pgm_sys_id' +
      '/1001:1500/sort/frs.frs_naics.pgm_sys_acrnm:asc,frs.frs_naics.pgm_sys_id:asc/CSV',
  );
});

test('a page header is read upper-cased and without qualifiers, the facility table winning a clash; rows stay as they are', () => {
  assert.equal(normalizeFrsPage('registry_id,primary_name\n1,acme inc.\n'), 'REGISTRY_ID,PRIMARY_NAME\n1,acme inc.\n');
  assert.equal(
    normalizeFrsPage('pgm_sys_id,naics_code,"frs.frs_program_facility.pgm_sys_id",create_date\r\n1,"x.y",1,2015-12-31\r\n'),
    'FRS_NAICS.PGM_SYS_ID,NAICS_CODE,PGM_SYS_ID,CREATE_DATE\r\n1,"x.y",1,2015-12-31\r\n',
  );
  assert.equal(normalizeFrsPage('frs.other.registry_id,registry_id\n'), 'FRS.OTHER.REGISTRY_ID,REGISTRY_ID\n', 'another table loses to the first');
  assert.equal(normalizeFrsPage(''), '');
});
