import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { toHex } from '../encoding/hex.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { ManualClock } from '../time/clock.test-util.ts';
import { startNode } from './node.test-util.ts';

const A = key(1);
const B = key(2);
const C = key(3);

test('peers: a node lists each connected peer with its direction, connection time, announced height and the median of its round trips', async () => {
  const clock = new ManualClock();
  const bus = new MemoryBus(clock);
  bus.setLatency(A.publicKey, B.publicKey, 8);
  bus.setLatency(A.publicKey, C.publicKey, 30);
  const chainB = await openChain();
  await mine(chainB, B, 3);
  const a = await startNode(bus, await openChain(), A, clock, { pings: { intervalMs: 2_000 } });
  const b = await startNode(bus, chainB, B, clock);
  const c = await startNode(bus, await openChain(), C, clock);
  try {
    const since = Math.floor(clock.now() / 1000);
    await clock.until('a has measured both peers three times', () => a.peers().every((p) => p.rtt_samples.length >= 3), 10_000);
    const peers = Object.fromEntries(a.peers().map((p) => [p.node_id, p]));
    assert.hasAllKeys(peers, [toHex(B.publicKey), toHex(C.publicKey)]);
    const ofB = peers[toHex(B.publicKey)]!;
    // b and c joined after a: they dialled it.
    assert.equal(ofB.direction, 'inbound');
    assert.equal(ofB.connected_since, since);
    assert.equal(ofB.height, 3);
    assert.equal(ofB.rtt_ms, 8);
    assert.deepEqual(ofB.multiaddrs, [`/memory/${toHex(B.publicKey)}`]);
    assert.equal(peers[toHex(C.publicKey)]!.rtt_ms, 30);
    assert.isAtMost(peers[toHex(C.publicKey)]!.rtt_samples.length, 5);
    assert.deepEqual(b.peers().find((p) => p.node_id === toHex(A.publicKey))!.direction, 'outbound');
  } finally {
    for (const n of [a, b, c]) await n.stop();
  }
});
