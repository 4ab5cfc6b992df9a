/**
 * A libp2p transport in memory, for running the real Libp2pNetwork (peer routing included) in one
 * process on every runtime: nodes listen on `/memory/<name>` and dial each other there through
 * `multiaddrConnectionPair` of @libp2p/utils. (libp2p's own is the @libp2p/memory package; this is
 * the little of it the tests need, with the packages the project already has.)
 */
import {
  type Connection,
  ConnectionFailedError,
  type CreateListenerOptions,
  type DialTransportOptions,
  type Listener,
  type Transport,
  transportSymbol,
} from '@libp2p/interface';
import { multiaddrConnectionPair } from '@libp2p/utils';
import { CODE_P2P, type Multiaddr, multiaddr } from '@multiformats/multiaddr';
import { Memory } from '@multiformats/multiaddr-matcher';

const listening = new Map<string, MemoryListener>();
let dials = 0;

class MemoryListener extends EventTarget {
  readonly #options: CreateListenerOptions;
  #address: Multiaddr | null = null;
  readonly #stopping = new AbortController();

  constructor(options: CreateListenerOptions) {
    super();
    this.#options = options;
  }

  async listen(address: Multiaddr): Promise<void> {
    const key = address.toString();
    if (listening.has(key)) throw new Error(`${key} is taken`);
    listening.set(key, this);
    this.#address = address;
    queueMicrotask(() => this.dispatchEvent(new CustomEvent('listening')));
  }

  /** The far end's half of a new connection from `dialer` (its own half is returned by dial). */
  accept(from: string): ReturnType<typeof multiaddrConnectionPair>[0] {
    const [outbound, inbound] = multiaddrConnectionPair({
      outbound: { remoteAddr: this.#address! },
      inbound: { remoteAddr: multiaddr(`/memory/${from}`) },
    });
    this.#options.upgrader.upgradeInbound(inbound, { signal: this.#stopping.signal }).catch((error: Error) => inbound.abort(error));
    return outbound;
  }

  getAddrs(): Multiaddr[] {
    return this.#address === null ? [] : [this.#address];
  }

  updateAnnounceAddrs(): void {}

  listenerCount(): number {
    return 0;
  }

  safeDispatchEvent(type: string, detail?: CustomEventInit): boolean {
    return this.dispatchEvent(new CustomEvent(type, detail));
  }

  async close(): Promise<void> {
    if (this.#address !== null) listening.delete(this.#address.toString());
    this.#stopping.abort();
    queueMicrotask(() => this.dispatchEvent(new CustomEvent('close')));
  }
}

class MemoryTransport implements Transport {
  readonly [transportSymbol] = true as const;
  readonly [Symbol.toStringTag] = 'mesh/memory-transport';

  async dial(address: Multiaddr, options: DialTransportOptions): Promise<Connection> {
    options.signal.throwIfAborted();
    const listener = listening.get(address.decapsulateCode(CODE_P2P).toString());
    if (listener === undefined) throw new ConnectionFailedError(`nothing listens at ${address.toString()}`);
    const connection = listener.accept(`dialer-${++dials}`);
    try {
      return await options.upgrader.upgradeOutbound(connection, options);
    } catch (error) {
      connection.abort(error as Error);
      throw error;
    }
  }

  createListener(options: CreateListenerOptions): Listener {
    return new MemoryListener(options) as unknown as Listener;
  }

  listenFilter(addresses: Multiaddr[]): Multiaddr[] {
    return addresses.filter((address) => Memory.exactMatch(address));
  }

  dialFilter(addresses: Multiaddr[]): Multiaddr[] {
    return addresses.filter((address) => Memory.matches(address));
  }
}

/** The transport, for a host's `transports` list. */
export function memoryTransport(): () => Transport {
  return () => new MemoryTransport();
}
