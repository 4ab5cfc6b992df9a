/**
 * The order in which libp2p tries a peer's addresses. A peer that announces relay addresses
 * (`…/p2p-circuit`) holds reservations because it is not reachable from outside its network
 * (relay-keeper.ts): its other addresses are LAN or loopback ones, which from elsewhere at best fail
 * at once and at worst time out one after another (libp2p dials a peer's addresses in turn, 5 s
 * each) while a request to it waits. Its relay addresses come first; the rest keep libp2p's order.
 * Peers without relay addresses are dialled as libp2p would.
 */
import type { Address } from '@libp2p/interface';
import { circuitRelayAddressesLast, loopbackAddressLast, publicAddressesFirst, reliableTransportsFirst } from '@libp2p/utils';

/** libp2p's comparator with relay addresses first instead of last. */
export function relayAddressesFirst(a: Address, b: Address): -1 | 0 | 1 {
  return (
    circuitRelayAddressesLast(b.multiaddr, a.multiaddr) ||
    loopbackAddressLast(a.multiaddr, b.multiaddr) ||
    publicAddressesFirst(a.multiaddr, b.multiaddr) ||
    (a.isCertified === b.isCertified ? 0 : a.isCertified ? -1 : 1) ||
    reliableTransportsFirst(a.multiaddr, b.multiaddr)
  );
}
