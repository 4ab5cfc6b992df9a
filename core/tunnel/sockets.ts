/**
 * The TCP side of a tunnel, as a port: the core tunnel service listens and connects through it and
 * never names a runtime. The Node host gives host-node/tunnel-sockets.ts (node:net); tests give
 * memory sockets (sockets.test-util.ts); a browser host has none, and the node then refuses tunnels.
 * A connection is a Duplex (core/net/duplex.ts): a FIN per direction, a reset that ends both.
 */
import type { Duplex } from '../net/duplex.ts';
import type { SocketAddress } from './address.ts';

export interface SocketListener {
  /** Where it listens: the port the system chose when 0 was asked for. */
  readonly address: SocketAddress;
  /** Stops listening at once (the port is free again); connections already accepted go on. */
  close(): Promise<void>;
}

export interface TunnelSockets {
  /**
   * Listens on `address` and hands each connection accepted to `accept`. Fails with TunnelError
   * 'bind-failed' when the address cannot be bound.
   */
  listen(address: SocketAddress, accept: (connection: Duplex) => void): Promise<SocketListener>;
  /** Connects to `address`; fails with an Error saying why, or the signal's reason. */
  connect(address: SocketAddress, options: { signal: AbortSignal }): Promise<Duplex>;
}
