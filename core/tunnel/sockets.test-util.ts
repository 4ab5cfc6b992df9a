/**
 * TCP in memory for the tunnel's tests: one loopback interface shared by the nodes of a test (as
 * processes on one machine share it), listeners by host:port, and connections that behave as the
 * Node host's do (a FIN per direction, a reset that ends both).
 */
import type { Duplex } from '../net/duplex.ts';
import { memoryStreamPair } from '../net/memory-stream.ts';
import { formatAddress, type SocketAddress } from './address.ts';
import { TunnelError } from './errors.ts';
import type { SocketListener, TunnelSockets } from './sockets.ts';

const NOBODY = new Uint8Array(32);

export class MemorySockets implements TunnelSockets {
  readonly #listeners = new Map<string, (connection: Duplex) => void>();
  #nextPort = 40_000;
  /** Every connection made, by the address it went to. */
  readonly connects: string[] = [];

  async listen(address: SocketAddress, accept: (connection: Duplex) => void): Promise<SocketListener> {
    const bound = address.port === 0 ? { host: address.host, port: this.#nextPort++ } : address;
    const key = formatAddress(bound);
    if (this.#listeners.has(key)) throw new TunnelError('bind-failed', `cannot listen on ${key}: address in use`);
    this.#listeners.set(key, accept);
    return {
      address: bound,
      close: async () => {
        if (this.#listeners.get(key) === accept) this.#listeners.delete(key);
      },
    };
  }

  async connect(address: SocketAddress, options: { signal: AbortSignal }): Promise<Duplex> {
    options.signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const key = formatAddress(address);
    this.connects.push(key);
    const accept = this.#listeners.get(key);
    if (accept === undefined) throw new Error(`connect ECONNREFUSED ${key}`);
    const pair = memoryStreamPair(NOBODY, NOBODY);
    accept(pair.server);
    return pair.opener;
  }

  /** Whether something listens on `address`. */
  listening(address: string): boolean {
    return this.#listeners.has(address);
  }
}
