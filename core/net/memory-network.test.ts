import { networkCompliance } from '../../test/network-compliance.ts';
import { SigningKey } from '../crypto/ed25519.ts';
import { MemoryBus } from './memory.test-util.ts';

networkCompliance('MemoryNetwork', async (count, links, limits) => {
  const bus = new MemoryBus(undefined, limits);
  const networks = Array.from({ length: count }, () => bus.join(SigningKey.generate().publicKey, { linked: false }));
  const pairs = links ?? networks.flatMap((_, i) => networks.slice(i + 1).map((__, j) => [i, i + 1 + j] as const));
  for (const [a, b] of pairs) bus.link(networks[a]!, networks[b]!);
  return {
    networks,
    disconnect: async (a, b) => bus.unlink(networks[a]!, networks[b]!),
    stop: async (a) => bus.leave(networks[a]!),
    close: async () => networks.forEach((net) => bus.leave(net)),
  };
});
