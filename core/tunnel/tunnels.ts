/**
 * The tunnel service, as Kubo's `ipfs p2p listen/forward` does it (docs/tunnel.md). A listener
 * exposes a local TCP service under a protocol name to the nodes it allows: each stream a peer
 * opens on `/mesh/tunnel/1/<name>` is answered (accepted or refused, wire.ts) and joined to a new
 * connection to the service. A forward listens on a local port: each connection accepted there is
 * joined to a new stream to the listening node. The bytes are the application's; the stream is
 * authenticated by libp2p, so the listener knows which node connects.
 *
 * Tunnels live as long as the node: they bind local ports and expose services, which a user
 * decides on again after a restart, as with Kubo. Both sides are bounded: the tunnels a node
 * keeps, the connections each carries at once, the nodes a listener allows.
 */

import { type Random, systemRandom } from '../crypto/random.ts';
import { bytesEqual } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { messageOf } from '../errors.ts';
import type { Duplex } from '../net/duplex.ts';
import type { Network, PeerStream } from '../net/network.ts';
import { type Clock, systemClock } from '../time/clock.ts';
import { formatAddress, type SocketAddress } from './address.ts';
import { TunnelError } from './errors.ts';
import type { SocketListener, TunnelSockets } from './sockets.ts';
import { splice } from './splice.ts';
import type { TunnelRequest, TunnelView } from './types.ts';
import { ANSWER, afterAnswer, refusalFrame, TunnelRefusedError, tunnelProtocolId } from './wire.ts';

export interface TunnelLimits {
  /** Tunnels one node keeps open, listeners and forwards together (default 64). */
  readonly tunnels: number;
  /** Connections one tunnel carries at once (default 64); one more is refused. */
  readonly connections: number;
  /** NodeIds one listener allows (default 256). */
  readonly allow: number;
  /** How long opening a stream to the listener, or connecting to its service, may take (default 10 s). */
  readonly connectMs: number;
  /** How long a listener waits for a refused forwarder to hang up before it resets the stream (default 5 s). */
  readonly refusalMs: number;
}

export const DEFAULT_TUNNEL_LIMITS: TunnelLimits = Object.freeze({ tunnels: 64, connections: 64, allow: 256, connectMs: 10_000, refusalMs: 5_000 });

export interface TunnelServiceOptions {
  readonly network: Network;
  readonly sockets: TunnelSockets;
  readonly clock?: Clock;
  /** Tunnel ids (default: the platform's CSPRNG). */
  readonly random?: Random;
  readonly log?: (line: string) => void;
  readonly limits?: Partial<TunnelLimits>;
}

const short = (hex: string): string => `${hex.slice(0, 16)}…`;

/** One connection a tunnel carries: its two sides, as they come to be. */
class Carried {
  readonly parts: Duplex[] = [];

  reset(reason: Error): void {
    for (const part of this.parts) part.reset(reason);
  }
}

class Tunnel {
  readonly id: string;
  readonly request: TunnelRequest;
  readonly protocolId: string;
  readonly createdAt: number;
  readonly live = new Set<Carried>();
  /** NodeIds (hex) a listener allows, in the order given. */
  readonly allow: readonly string[];
  accepted = 0;
  refused = 0;
  closed = false;
  /** Stops taking new connections: unserves the protocol, or closes the local listener. */
  stopTaking: () => Promise<void> = async () => {};
  /** A forward's local listener, once bound. */
  listener: SocketListener | null = null;

  constructor(id: string, request: TunnelRequest, createdAt: number) {
    this.id = id;
    this.request = request;
    this.protocolId = tunnelProtocolId(request.protocol);
    this.createdAt = createdAt;
    this.allow = request.kind === 'listen' ? [...new Set(request.allow.map(toHex))] : [];
  }

  view(): TunnelView {
    const common = {
      id: this.id,
      protocol: this.request.protocol,
      connections: this.live.size,
      accepted: this.accepted,
      refused: this.refused,
      created_at: Math.floor(this.createdAt / 1000),
    };
    const r = this.request;
    if (r.kind === 'listen') return { ...common, kind: 'listen', target: formatAddress(r.target), allow: this.allow };
    return { ...common, kind: 'forward', node: toHex(r.node), address: formatAddress(this.listener?.address ?? r.bind) };
  }

  /** Stops taking connections and resets those it carries. */
  async shut(reason: string): Promise<void> {
    this.closed = true;
    await this.stopTaking();
    const error = new Error(reason);
    for (const carried of this.live) carried.reset(error);
    this.live.clear();
  }
}

export class TunnelService {
  readonly #network: Network;
  readonly #sockets: TunnelSockets;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #log: (line: string) => void;
  readonly #limits: TunnelLimits;
  readonly #tunnels = new Map<string, Tunnel>();
  /** Tunnels being opened (binding their port), counted against the limit. */
  #opening = 0;
  /** Refused streams waiting for their forwarder to hang up. */
  readonly #refusing = new Set<PeerStream>();
  #stopped = false;

  constructor(options: TunnelServiceOptions) {
    this.#network = options.network;
    this.#sockets = options.sockets;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? systemRandom;
    this.#log = options.log ?? (() => {});
    this.#limits = { ...DEFAULT_TUNNEL_LIMITS, ...options.limits };
  }

  /**
   * Opens a tunnel. TunnelError: 'too-many-tunnels', 'protocol-taken', 'bind-failed' (409),
   * 'self' (400); InvalidNameError for a protocol name outside the alphabet (400).
   */
  async open(request: TunnelRequest): Promise<TunnelView> {
    if (this.#stopped) throw new TunnelError('unavailable', 'the node is stopping');
    if (this.#tunnels.size + this.#opening >= this.#limits.tunnels) {
      throw new TunnelError('too-many-tunnels', `this node keeps at most ${this.#limits.tunnels} tunnels: close one first`);
    }
    if (request.kind === 'listen' && (request.allow.length === 0 || request.allow.length > this.#limits.allow)) {
      throw new TunnelError('bad-allow-list', `a listener allows 1 to ${this.#limits.allow} nodes`);
    }
    const tunnel = new Tunnel(toHex(this.#random.bytes(8)), request, this.#clock.now());
    if (request.kind === 'listen') this.#listen(tunnel);
    else await this.#forward(tunnel, request.node, request.bind);
    this.#tunnels.set(tunnel.id, tunnel);
    const r = request;
    this.#log(
      r.kind === 'listen'
        ? `tunnel ${tunnel.id}: listening on ${r.protocol} for ${tunnel.allow.length} node${tunnel.allow.length === 1 ? '' : 's'}, to ${formatAddress(r.target)}`
        : `tunnel ${tunnel.id}: ${formatAddress(tunnel.listener!.address)} forwards to ${r.protocol} on ${short(toHex(r.node))}`,
    );
    return tunnel.view();
  }

  list(): TunnelView[] {
    return [...this.#tunnels.values()].map((t) => t.view());
  }

  get(id: string): TunnelView | undefined {
    return this.#tunnels.get(id)?.view();
  }

  /** Closes a tunnel: no new connections, and those it carries are reset. False when there is no such tunnel. */
  async close(id: string): Promise<boolean> {
    const tunnel = this.#tunnels.get(id);
    if (tunnel === undefined) return false;
    this.#tunnels.delete(id);
    await tunnel.shut('the tunnel was closed');
    this.#log(`tunnel ${id}: closed`);
    return true;
  }

  /** Closes every tunnel (the node stops). */
  async stop(): Promise<void> {
    this.#stopped = true;
    const tunnels = [...this.#tunnels.values()];
    this.#tunnels.clear();
    await Promise.all(tunnels.map((t) => t.shut('the node stopped')));
    for (const stream of this.#refusing) stream.reset(new Error('the node stopped'));
  }

  // ---- listening: streams from peers to the local service ----

  #listen(tunnel: Tunnel): void {
    const protocol = tunnel.request.protocol;
    for (const other of this.#tunnels.values()) {
      if (other.request.kind === 'listen' && other.request.protocol === protocol) {
        throw new TunnelError('protocol-taken', `this node already listens on ${protocol} (tunnel ${other.id})`);
      }
    }
    const unserve = this.#network.serveStream(tunnel.protocolId, (stream) => this.#onStream(tunnel, stream), { maxStreams: 2 * this.#limits.connections });
    tunnel.stopTaking = async () => unserve();
  }

  #onStream(tunnel: Tunnel, stream: PeerStream): void {
    const r = tunnel.request;
    if (r.kind !== 'listen' || tunnel.closed) return stream.reset(new Error('the tunnel was closed'));
    const peer = toHex(stream.peer);
    if (!tunnel.allow.includes(peer)) {
      return this.#refuse(tunnel, stream, ANSWER.notAllowed, `${peer} is not allowed on tunnel ${r.protocol}`);
    }
    if (tunnel.live.size >= this.#limits.connections) {
      return this.#refuse(tunnel, stream, ANSWER.busy, `tunnel ${r.protocol} carries ${tunnel.live.size} connections, as many as it takes`);
    }
    void this.#join(
      tunnel,
      stream,
      `connecting to ${formatAddress(r.target)}`,
      (signal) => this.#sockets.connect(r.target, { signal }),
      (error) => {
        this.#log(`tunnel ${tunnel.id}: cannot connect to ${formatAddress(r.target)} for ${short(peer)}: ${messageOf(error)}`);
        this.#refuse(tunnel, stream, ANSWER.targetDown, `the service behind tunnel ${r.protocol} does not answer`);
      },
      async (socket, carried) => {
        tunnel.accepted++;
        try {
          await stream.write(Uint8Array.of(ANSWER.accepted));
        } catch (error) {
          carried.reset(error as Error);
        }
        this.#ended(tunnel, short(peer), await splice(stream, socket));
      },
    );
  }

  /** Answers a refusal and resets the stream once the forwarder has read it (or after refusalMs). */
  #refuse(tunnel: Tunnel, stream: PeerStream, status: number, reason: string): void {
    tunnel.refused++;
    this.#log(`tunnel ${tunnel.id}: refused ${short(toHex(stream.peer))}: ${reason}`);
    this.#refusing.add(stream);
    const timer = this.#clock.setTimeout(() => stream.reset(new Error('the connection was refused')), this.#limits.refusalMs);
    const done = (): void => {
      timer.cancel();
      this.#refusing.delete(stream);
    };
    stream.closed.then(done, done);
    stream
      .write(refusalFrame(status, reason))
      .then(() => stream.closeWrite())
      .catch(() => stream.reset());
  }

  // ---- forwarding: local connections to a peer's listener ----

  async #forward(tunnel: Tunnel, node: Uint8Array, bind: SocketAddress): Promise<void> {
    if (bytesEqual(node, this.#network.self)) throw new TunnelError('self', 'a tunnel cannot forward to this node itself');
    this.#opening++;
    try {
      const listener = await this.#sockets.listen(bind, (socket) => this.#onSocket(tunnel, node, socket));
      tunnel.listener = listener;
      tunnel.stopTaking = () => listener.close();
    } finally {
      this.#opening--;
    }
    // Stopped while it was binding its port: the port goes again.
    if (this.#stopped) {
      await tunnel.shut('the node stopped');
      throw new TunnelError('unavailable', 'the node is stopping');
    }
  }

  #onSocket(tunnel: Tunnel, node: Uint8Array, socket: Duplex): void {
    if (tunnel.closed) return socket.reset(new Error('the tunnel was closed'));
    const protocol = tunnel.request.protocol;
    if (tunnel.live.size >= this.#limits.connections) {
      tunnel.refused++;
      this.#log(`tunnel ${tunnel.id}: refused a local connection: it carries ${tunnel.live.size} connections, as many as it takes`);
      return socket.reset(new Error('too many connections'));
    }
    const where = `${protocol} on ${short(toHex(node))}`;
    void this.#join(
      tunnel,
      socket,
      `opening ${where}`,
      (signal) => this.#network.openStream(node, tunnel.protocolId, { signal, maxStreams: 2 * this.#limits.connections }),
      (error) => {
        tunnel.refused++;
        this.#log(`tunnel ${tunnel.id}: cannot reach ${where}: ${messageOf(error)}`);
        socket.reset(error as Error);
      },
      async (stream) => {
        const end = await splice(
          socket,
          afterAnswer(stream, () => tunnel.accepted++),
        );
        if (end instanceof TunnelRefusedError) {
          tunnel.refused++;
          this.#log(`tunnel ${tunnel.id}: ${short(toHex(node))} refused the connection: ${end.message}`);
        } else this.#ended(tunnel, short(toHex(node)), end);
      },
    );
  }

  /**
   * Carries one connection of `tunnel`: `near` came in; `open` gets the far side within connectMs
   * (`failed` hears why it could not), and `run` joins the two. The connection counts against the
   * tunnel's limit until `run` is done.
   */
  async #join(
    tunnel: Tunnel,
    near: Duplex,
    what: string,
    open: (signal: AbortSignal) => Promise<Duplex>,
    failed: (error: unknown) => void,
    run: (far: Duplex, carried: Carried) => Promise<void>,
  ): Promise<void> {
    const carried = new Carried();
    carried.parts.push(near);
    tunnel.live.add(carried);
    try {
      let far: Duplex;
      try {
        far = await this.#within(what, open);
      } catch (error) {
        return failed(error);
      }
      carried.parts.push(far);
      if (tunnel.closed) return carried.reset(new Error('the tunnel was closed'));
      await run(far, carried);
    } finally {
      tunnel.live.delete(carried);
    }
  }

  /** Logs a connection that broke rather than closed (a closed tunnel's own resets are not news). */
  #ended(tunnel: Tunnel, peer: string, end: Error | null): void {
    if (end !== null && !tunnel.closed) this.#log(`tunnel ${tunnel.id}: a connection with ${peer} was reset: ${end.message}`);
  }

  /** Runs `step` with a signal aborted after connectMs. */
  async #within<T>(what: string, step: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const timer = this.#clock.setTimeout(() => controller.abort(new Error(`${what} took over ${this.#limits.connectMs} ms`)), this.#limits.connectMs);
    try {
      return await step(controller.signal);
    } finally {
      timer.cancel();
    }
  }
}
