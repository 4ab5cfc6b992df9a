import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { gossipRpcKinds, negotiationBytes, rpcKind, TrafficCounter, varintBytes } from './traffic.ts';

test('traffic: varints and request kinds', () => {
  assert.deepEqual([0, 127, 128, 16_383, 16_384].map(varintBytes), [1, 1, 2, 2, 3]);
  assert.equal(rpcKind('/mesh/rpc/1/sync.blocks'), 'rpc sync.blocks');
  assert.equal(rpcKind('sync.blocks'), 'rpc sync.blocks');
});

test('traffic: a new stream costs each end its multistream-select lines', () => {
  // "/multistream/1.0.0\n" is 19 bytes and "/ipfs/ping/1.0.0\n" 17, each after a 1-byte length.
  assert.equal(negotiationBytes('/ipfs/ping/1.0.0'), 20 + 18);
});

test('traffic: a gossipsub RPC is split among its topics and control', () => {
  // 200 bytes: a message of 120 (field: 1 + 1 + 120) and one of 30 (1 + 1 + 30); the rest and the 2-byte prefix are control.
  const kinds = gossipRpcKinds(200, [
    { topic: 'mesh-blocks', encodedBytes: 120 },
    { topic: 'mesh-heights', encodedBytes: 30 },
  ]);
  assert.deepEqual(kinds, [
    ['mesh-blocks', 122],
    ['mesh-heights', 32],
    ['gossipsub-control', 2 + 200 - 122 - 32],
  ]);
  assert.equal(
    kinds.reduce((sum, [, n]) => sum + n, 0),
    202,
  );
  assert.deepEqual(gossipRpcKinds(10, []), [['gossipsub-control', 11]]);
});

test('traffic: the counter adds by kind and lists the kinds in order', () => {
  const counter = new TrafficCounter();
  counter.count('ping', 64);
  counter.count('mesh-blocks', 10);
  counter.count('ping', 64);
  assert.deepEqual(Object.entries(counter.sent()), [
    ['mesh-blocks', 10],
    ['ping', 128],
  ]);
});
