/**
 * Reservations on the node's `--relay` peers, kept while the node runs. libp2p makes a reservation
 * when it listens at `<relay>/p2p-circuit`, but such a listen address fails the node's start when
 * the relay is down, and libp2p drops a reservation whose relay went away (a restart) without
 * making it again. So the node listens there only once it is connected to the relay (the network
 * redials relays as it does bootstrap peers), and again each time it connects after losing it.
 */
import type { Libp2p, PeerId } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import { messageOf } from '../core/errors.ts';

/** What of libp2p's components this needs: its transport manager's listen. */
interface WithTransportManager {
  readonly components: { readonly transportManager: { listen(addrs: Multiaddr[]): Promise<void> } };
}

/** Keeps a reservation on each relay in `relays` (each `…/p2p/<relay id>`) for libp2p's life. */
export function keepReservations(libp2p: Libp2p, relays: readonly Multiaddr[], log: (line: string) => void): void {
  const byPeer = new Map(relays.map((relay) => [relay.getComponents().findLast((c) => c.name === 'p2p')!.value!, relay]));
  const reserving = new Set<string>();
  const holds = (relay: string): boolean => libp2p.getMultiaddrs().some((ma) => ma.toString().includes(`/p2p/${relay}/p2p-circuit`));
  const reserve = (peer: PeerId): void => {
    const key = peer.toString();
    const relay = byPeer.get(key);
    if (relay === undefined || reserving.has(key) || holds(key)) return;
    reserving.add(key);
    (libp2p as unknown as WithTransportManager).components.transportManager
      .listen([relay.encapsulate('/p2p-circuit')])
      .then(() => log(`p2p: holding a reservation on relay ${key}`))
      .catch((error: unknown) => log(`p2p: no reservation on relay ${key}: ${messageOf(error)}`))
      .finally(() => reserving.delete(key));
  };
  libp2p.addEventListener('peer:connect', (event) => reserve(event.detail));
  for (const peer of libp2p.getPeers()) reserve(peer);
}
