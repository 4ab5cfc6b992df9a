/**
 * Which of a peer's addresses this node gives out when it answers a lookup for that peer
 * (docs/network.md, "Peer routing"). A private address (loopback, LAN, benchmarking and the other
 * special ranges) leads somewhere only inside its own network. This node serves one only when the
 * peer is connected to it directly from that very IP address: then the two share that network (a
 * devnet on loopback, a LAN), and so, likely, does whoever asks. A peer seen from another IP is
 * behind a NAT from here, and its private addresses would each cost the asker a dial's timeout
 * (libp2p tries a peer's addresses in turn, and joins every other dial to the peer to that one).
 * Public addresses, names and relay (`/p2p-circuit`) addresses are always served.
 */
import { isPrivate } from '@libp2p/utils';
import type { Multiaddr } from '@multiformats/multiaddr';
import { ipOf } from './peer-limits.ts';

/** `addresses` less the private ones whose IP is not among `seenFrom` (the peer's direct connections' IPs). */
export function addressesToServe(addresses: readonly Multiaddr[], seenFrom: ReadonlySet<string>): Multiaddr[] {
  return addresses.filter((address) => {
    if (address.getComponents().some((c) => c.name === 'p2p-circuit')) return true;
    const ip = ipOf(address);
    return ip === null || !isPrivate(address) || seenFrom.has(ip);
  });
}
