/**
 * The simulator's network passes the compliance suite of the network port, as the memory network
 * and libp2p do: on the system clock, without latency, every pair linked unless told otherwise.
 * And its gossip control costs what gossipsub's does with the node's options.
 */
import { assert } from 'chai';
import { test } from '../../test/harness.ts';
import { networkCompliance } from '../../test/network-compliance.ts';
import { SigningKey } from '../crypto/ed25519.ts';
import { IHAVE_HEARTBEATS } from '../net/gossip-options.ts';
import { systemClock } from '../time/clock.ts';
import { testScheduler } from '../time/scheduler.test-util.ts';
import { NO_LATENCY } from './latency.ts';
import { Prng } from './prng.ts';
import { CONTROL_BYTES, CONTROL_KIND, GOSSIPSUB, ID_BYTES, SimNetwork } from './sim-network.ts';
import { SimWorld } from './world.ts';

networkCompliance('SimNetwork', async (count, links, limits) => {
  const rng = new Prng('compliance');
  const world = new SimWorld<SimNetwork>({ clock: systemClock, latency: NO_LATENCY, rng, loss: 0, uplinkBytesPerSec: null });
  const networks = Array.from({ length: count }, (_, i) => new SimNetwork(world, SigningKey.generate().publicKey, i, rng.fork(`net/${i}`), limits));
  for (const net of networks) world.attach(net);
  const pairs = links ?? networks.flatMap((_, i) => networks.slice(i + 1).map((__, j) => [i, i + 1 + j] as const));
  for (const [a, b] of pairs) world.link(networks[a]!, networks[b]!);
  const stop = (net: SimNetwork): void => {
    net.close();
    world.detach(net);
  };
  return {
    networks,
    disconnect: async (a, b) => world.unlink(networks[a]!, networks[b]!),
    stop: async (a) => stop(networks[a]!),
    close: async () => networks.forEach(stop),
  };
});

test('SimNetwork: IHAVE advertises an id at IHAVE_HEARTBEATS heartbeats, to the peers outside the mesh', async () => {
  const clock = testScheduler();
  const rng = new Prng('ihave');
  const world = new SimWorld<SimNetwork>({ clock, latency: NO_LATENCY, rng, loss: 0, uplinkBytesPerSec: null });
  // Ten nodes, each linked to the nine others: a mesh of D = 6, three peers outside it.
  const networks = Array.from({ length: 10 }, (_, i) => new SimNetwork(world, SigningKey.generate().publicKey, i, rng.fork(`net/${i}`)));
  for (const net of networks) world.attach(net);
  for (const [i, a] of networks.entries()) for (const b of networks.slice(i + 1)) world.link(a, b);
  for (const net of networks) net.handle('t', async () => 'accept');
  await clock.advance(5 * GOSSIPSUB.heartbeatMs);
  const publisher = networks[0]!;
  const control = (): number => publisher.sent.get(CONTROL_KIND) ?? 0;
  const before = control();
  await publisher.publish('t', new Uint8Array(8));
  await clock.advance(GOSSIPSUB.historyLength * GOSSIPSUB.heartbeatMs);
  // Every peer had it from the publish, so nobody asks: what the publisher sent is its IHAVE, one id to each of three.
  const outside = 9 - GOSSIPSUB.D;
  assert.equal(control() - before, IHAVE_HEARTBEATS * outside * (CONTROL_BYTES + ID_BYTES));
  for (const net of networks) net.close();
});
