import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { key, mine, openChain } from '../chain/testnet.test-util.ts';
import { toHex } from '../encoding/hex.ts';
import { MemoryBus } from '../net/memory.test-util.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { startNode } from './node.test-util.ts';

const A = key(1);
const B = key(2);
const C = key(3);

test('peers: a node lists each connected peer with its direction, connection time, announced height and the median of its round trips', async () => {
  const clock = testScheduler();
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
    await clock.until('a has measured both peers three times', () => a.services.pings.peers().every((p) => p.rtt_samples.length >= 3), 10_000);
    const peers = Object.fromEntries(a.services.pings.peers().map((p) => [p.node_id, p]));
    assert.hasAllKeys(peers, [toHex(B.publicKey), toHex(C.publicKey)]);
    const ofB = peers[toHex(B.publicKey)]!;
    // b and c joined after a: they dialled it.
    assert.equal(ofB.direction, 'inbound');
    assert.equal(ofB.connected_since, since);
    assert.equal(ofB.height, 3);
    assert.equal(ofB.rtt_ms, 8);
    assert.deepEqual(ofB.multiaddrs, [`/memory/${toHex(B.publicKey)}`]);
    assert.equal(peers[toHex(C.publicKey)]!.rtt_ms, 30);
    assert.isAtMost(peers[toHex(C.publicKey)]!.rtt_samples.length, 10);
    assert.deepEqual(b.services.pings.peers().find((p) => p.node_id === toHex(A.publicKey))!.direction, 'outbound');
  } finally {
    for (const n of [a, b, c]) await n.stop();
  }
});

test('peers: GET /peers and GET /netgraph/rtt read one window of pings, and agree on a link after round trips and failures', async () => {
  const clock = testScheduler();
  const bus = new MemoryBus(clock);
  bus.setLatency(A.publicKey, B.publicKey, 8);
  // Pings every 2 s, abandoned after 2 s.
  const a = await startNode(bus, await openChain(), A, clock, { pings: { intervalMs: 2_000 } });
  const b = await startNode(bus, await openChain(), B, clock);
  const ofB = () => a.services.pings.peers().find((p) => p.node_id === toHex(B.publicKey))!;
  const failures = () => a.services.pings.figures(B.publicKey).outcomes - a.services.pings.figures(B.publicKey).samplesMs.length;
  try {
    await clock.until('four round trips of 8 ms', () => ofB()?.rtt_samples.length === 4, 20_000);
    bus.setLatency(A.publicKey, B.publicKey, 3_000);
    await clock.until('two pings failed', () => failures() === 2, 20_000);
    bus.setLatency(A.publicKey, B.publicKey, 30);
    await clock.until('three round trips of 30 ms', () => ofB().rtt_samples.length === 7, 20_000);
    // The window: 8, 8, 8, 8, failed, failed, 30, 30, 30. The last five round trips alone would
    // have a median of 30; the window's seven have 8, and both views say so.
    const peer = ofB();
    assert.deepEqual(peer.rtt_samples, [8, 8, 8, 8, 30, 30, 30]);
    assert.equal(peer.rtt_ms, 8);
    const rtt = a.services.netgraph.rtt(B.publicKey);
    assert.deepInclude(rtt, { source: 'measured', rtt_ms: 8, samples: 7, loss: 2 / 9, jitter_ms: 22 / 6 });
  } finally {
    for (const n of [a, b]) await n.stop();
  }
});
