/**
 * The simulator's network passes the compliance suite of the network port, as the memory network
 * and libp2p do: on the system clock, without latency, every pair linked unless told otherwise.
 */
import { networkCompliance } from '../../test/network-compliance.ts';
import { SigningKey } from '../crypto/ed25519.ts';
import { systemClock } from '../time/clock.ts';
import { NO_LATENCY } from './latency.ts';
import { Prng } from './prng.ts';
import { SimNetwork } from './sim-network.ts';
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
