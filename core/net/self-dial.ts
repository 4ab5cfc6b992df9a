/**
 * A peer's loopback address leads to this machine, whoever announced it. When this node listens
 * on that port itself (every node of a lab or a fleet takes the same default port), dialling it
 * connects the node to itself: the handshake fails only after the connection has taken one of the
 * few slots of connections being set up (libp2p's `maxIncomingPendingConnections`), and a node
 * looking up peers whose loopback addresses it holds filled them all and refused its real peers
 * for seconds (docs/network.md, "Peer routing").
 */
import { isLoopback } from '@libp2p/utils';
import type { Multiaddr } from '@multiformats/multiaddr';

const WILDCARDS: ReadonlySet<string> = new Set(['0.0.0.0', '::']);

const tcpPortOf = (address: Multiaddr): string | undefined => address.getComponents().find((c) => c.name === 'tcp')?.value;

/** Whether `address` is a loopback address at a TCP port one of `listening` (this node's listen addresses) takes. */
export function dialsItself(address: Multiaddr, listening: readonly Multiaddr[]): boolean {
  if (!isLoopback(address)) return false;
  const port = tcpPortOf(address);
  if (port === undefined) return false;
  return listening.some((own) => {
    const ip = own.getComponents()[0]?.value;
    return tcpPortOf(own) === port && ip !== undefined && (WILDCARDS.has(ip) || isLoopback(own));
  });
}
