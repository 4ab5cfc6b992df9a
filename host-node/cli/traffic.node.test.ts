/** `mesh traffic`: formatted from the counts, and in-process against the node's real HTTP API over a fake node. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TRAFFIC } from '../../core/api/fake-node.test-util.ts';
import { type FakeApi, serveFakeApi } from './fake-api.test-util.ts';
import { formatTraffic, trafficCommand } from './traffic.ts';

let api: FakeApi;

before(async () => {
  api = await serveFakeApi();
});
after(() => api.close());

test('mesh traffic: the kinds, largest first, with their share and the total', () => {
  const lines = formatTraffic({ ping: 100, 'mesh-blocks': 300 }).trimEnd().split('\n');
  assert.deepEqual(
    lines.map((l) => l.split(/\s{2,}/).filter(Boolean)),
    [
      ['KIND', 'BYTES', 'SHARE'],
      ['mesh-blocks', '300', '75.0 %'],
      ['ping', '100', '25.0 %'],
      ['total', '400', '100.0 %'],
    ],
  );
});

test('mesh traffic asks the node, and --json prints its answer', async () => {
  const shown = await api.run(trafficCommand, 'mesh traffic', [...api.common]);
  assert.equal(shown.code, 0, shown.err);
  assert.match(shown.out, /^mesh-blocks +12345 +71\.4 %$/m);
  const json = await api.run(trafficCommand, 'mesh traffic', [...api.common, '--json']);
  assert.deepEqual(JSON.parse(json.out), { sent: TRAFFIC });
});
