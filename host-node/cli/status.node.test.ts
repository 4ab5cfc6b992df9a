import { assert } from 'chai';
import { STATUS } from '../../core/api/fake-node.test-util.ts';
import { test } from '../../test/harness.ts';
import { formatStatus } from './status.ts';

test('mesh status: peers, and while there are none, what to do under them', () => {
  assert.match(formatStatus(STATUS), /^peers {9}2\n$/m);
  assert.notMatch(formatStatus(STATUS), /alone/);
  const alone = formatStatus({ ...STATUS, peers: 0, alone: 'restart with --bootstrap <multiaddr>' });
  assert.match(alone, /^peers {9}0\n {2}alone {7}restart with --bootstrap <multiaddr>\n$/m);
});
