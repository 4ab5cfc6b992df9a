/**
 * `mesh status`'s reachability line, in-process against the node's real HTTP API over a fake node:
 * the verdict alone, and with the relay addresses a private node announces.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FakeNode, STATUS } from '../../core/api/fake-node.test-util.ts';
import { type FakeApi, serveFakeApi } from './fake-api.test-util.ts';
import { statusCommand } from './status.ts';

let api: FakeApi;

before(async () => {
  api = await serveFakeApi();
});
after(() => api.close());

test('mesh status shows whether peers can reach the node, and through which relays', async () => {
  const unknown = await api.run(statusCommand, 'mesh status', [...api.common], new FakeNode());
  assert.equal(unknown.code, 0, unknown.err);
  assert.match(unknown.out, /^reachability {2}unknown$/m);

  const relayed = '/ip4/198.18.0.10/tcp/4001/p2p/12D3KooWRelay/p2p-circuit/p2p/12D3KooWSelf';
  const node = new FakeNode();
  node.ledger.statusAnswer = { ...STATUS, reachability: 'private', relay_addresses: [relayed] };
  const shown = await api.run(statusCommand, 'mesh status', [...api.common], node);
  assert.match(shown.out, new RegExp(`^reachability {2}private, through ${relayed}$`, 'm'));
  const json = await api.run(statusCommand, 'mesh status', [...api.common, '--json'], node);
  assert.deepEqual(JSON.parse(json.out).relay_addresses, [relayed]);
});
