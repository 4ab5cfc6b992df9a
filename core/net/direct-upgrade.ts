/**
 * Relayed connections upgraded to direct ones. A circuit relay limits a connection in time and
 * bytes (circuit-relay v2), so libp2p marks it `limits` and runs on it only the protocols that say
 * so. When a node has such a connection to a peer that listens on WebRTC through a relay (an
 * address `…/p2p-circuit/webrtc`), the side that dialled the relayed connection dials that
 * address: the WebRTC transport signals SDP offer, answer and ICE candidates over the relayed
 * connection, ICE punches a UDP path through both NATs (the public mapping comes from STUN), and
 * the relayed connection is closed once the direct one is up. Bulk protocols wait for that, and
 * fail with RelayedOnlyError saying why when it cannot happen (docs/network.md, "Relayed
 * connections"). DCUtR (a host service) tries its own upgrade beside it where a transport can punch.
 */
import type { Connection, Libp2p, PeerId } from '@libp2p/interface';
import { CODE_P2P, type Multiaddr } from '@multiformats/multiaddr';
import { WebRTC } from '@multiformats/multiaddr-matcher';
import { messageOf } from '../errors.ts';
import type { Clock } from '../time/clock.ts';
import { RelayedOnlyError } from './errors.ts';

/** How long one upgrade may take: the signalling round trips through the relay and ICE's checks. */
export const UPGRADE_MS = 10_000;
/** How long a relayed connection this node dialled waits for identify before its upgrade starts anyway. */
export const IDENTIFY_WAIT_MS = 3_000;
/** Dials within one upgrade's UPGRADE_MS: one that fails before the time is up is tried again. */
export const UPGRADE_ATTEMPTS = 3;
/** After a failed upgrade, bulk calls fail at once with its reason for this long, then try again. */
export const RETRY_UPGRADE_MS = 60_000;

interface Failure {
  readonly reason: string;
  readonly at: number;
}

/** Whether `connection` is limited by a relay (libp2p's `limits`). */
export const isRelayed = (connection: Connection): boolean => connection.limits !== undefined;

export class DirectUpgrades {
  readonly #libp2p: Libp2p;
  readonly #clock: Clock;
  readonly #log: (line: string) => void;
  readonly #running = new Map<string, Promise<void>>();
  readonly #failed = new Map<string, Failure>();
  /** The addresses each peer announced (identify), kept by the network. */
  readonly #addressesOf: (peer: PeerId) => readonly Multiaddr[];
  readonly #stopping = new AbortController();
  /** Connections identify has run on: a WebRTC connection proves so that its data channels work. */
  readonly #identified = new WeakSet<Connection>();

  constructor(libp2p: Libp2p, clock: Clock, log: (line: string) => void, addressesOf: (peer: PeerId) => readonly Multiaddr[]) {
    this.#libp2p = libp2p;
    this.#clock = clock;
    this.#log = log;
    this.#addressesOf = addressesOf;
  }

  /**
   * Called when identify has run on `connection`: a relayed one this node dialled is upgraded (the
   * other side waits, so the two do not build two direct connections at once).
   */
  identified(connection: Connection): void {
    this.#identified.add(connection);
    if (!isRelayed(connection) || connection.direction !== 'outbound') return;
    this.#upgrade(connection.remotePeer).catch(() => {});
  }

  /**
   * Called when a connection opens. A relayed one this node dialled is upgraded after
   * IDENTIFY_WAIT_MS if identify has not run on it by then. libp2p's WebRTC answerer goes on to
   * open a connection when the offerer gave up (its signalling stream reset before ICE connected:
   * js-libp2p's readCandidatesUntilConnected swallows the error), whose data channels never open;
   * such a connection is not taken as direct (`directTo`) and is closed unless identify runs on it
   * in time.
   */
  opened(connection: Connection): void {
    if (isRelayed(connection) && connection.direction === 'outbound') {
      // Identify now and then never finishes on a fresh relayed connection; the upgrade does not wait for it.
      const timer = this.#clock.setTimeout(() => {
        if (!this.#identified.has(connection) && connection.status === 'open') this.#upgrade(connection.remotePeer).catch(() => {});
      }, IDENTIFY_WAIT_MS);
      connection.addEventListener('close', () => timer.cancel(), { once: true });
      return;
    }
    if (!isWebRtc(connection) || connection.direction !== 'inbound') return;
    const timer = this.#clock.setTimeout(() => {
      if (this.#identified.has(connection) || connection.status !== 'open') return;
      this.#log(`p2p: closing a WebRTC connection from ${connection.remotePeer.toString()} whose channels never opened`);
      connection.abort(new Error('no data channel opened'));
    }, UPGRADE_MS);
    connection.addEventListener('close', () => timer.cancel(), { once: true });
  }

  /** An open connection to `peer` that no relay limits and that works, if there is one. */
  directTo(peer: PeerId): Connection | undefined {
    return this.#libp2p.getConnections(peer).find((c) => c.status === 'open' && !isRelayed(c) && (!isWebRtc(c) || this.#identified.has(c)));
  }

  /** An open connection to `peer`, a direct one before a relayed one, if there is any. */
  connectionTo(peer: PeerId): Connection | undefined {
    return this.directTo(peer) ?? this.#libp2p.getConnections(peer).find((c) => c.status === 'open' && (isRelayed(c) || !isWebRtc(c)));
  }

  /** Forgets a peer gone from every connection. */
  forget(peer: PeerId): void {
    this.#failed.delete(peer.toString());
  }

  /**
   * A direct (unlimited) open connection to `peer`: the one there is, else the one an upgrade
   * (running, or started now) brings. RelayedOnlyError naming `what` and the reason otherwise.
   */
  async direct(peer: PeerId, what: string, signal: AbortSignal): Promise<Connection> {
    const key = peer.toString();
    const failure = this.#failed.get(key);
    const fresh = failure !== undefined && this.#clock.now() - failure.at < RETRY_UPGRADE_MS;
    if (!fresh) {
      const upgrade = this.#upgrade(peer);
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        upgrade.finally(() => signal.removeEventListener('abort', onAbort)).then(resolve, resolve);
      });
    }
    const connection = this.directTo(peer);
    if (connection !== undefined) return connection;
    const reason = this.#failed.get(key)?.reason ?? 'the direct connection closed';
    throw new RelayedOnlyError(`${key} is reached only through a relay, and ${what} runs on direct connections only: ${reason}`);
  }

  stop(): void {
    this.#stopping.abort(new Error('the node stopped'));
  }

  #upgrade(peer: PeerId): Promise<void> {
    const key = peer.toString();
    const running = this.#running.get(key);
    if (running !== undefined) return running;
    const attempt = this.#attempt(peer).then(
      () => void this.#failed.delete(key),
      (error: unknown) => {
        if (this.directTo(peer) !== undefined) return;
        const reason = messageOf(error);
        this.#failed.set(key, { reason, at: this.#clock.now() });
        this.#log(`p2p: ${key} stays relayed: ${reason}`);
        throw error;
      },
    );
    this.#running.set(key, attempt);
    const done = (): void => void this.#running.delete(key);
    attempt.then(done, done);
    return attempt;
  }

  async #attempt(peer: PeerId): Promise<void> {
    if (this.directTo(peer) !== undefined) return;
    // Unknown addresses (identify has not run) do not stop it: a peer without WebRTC refuses the signalling.
    const announced = this.#addressesOf(peer);
    if (announced.length > 0 && !announced.some((ma) => WebRTC.matches(ma))) {
      throw new Error('it announces no WebRTC address (`…/p2p-circuit/webrtc`), so no hole can be punched to it');
    }
    // Signalling goes over the relayed connection there is, whichever relay address is dialled:
    // one address is one attempt (libp2p would try each of the peer's relay addresses in turn).
    const relayed = this.#libp2p.getConnections(peer).find((c) => c.status === 'open' && isRelayed(c));
    if (relayed === undefined) throw new Error('the relayed connection closed');
    const address = relayed.remoteAddr.decapsulateCode(CODE_P2P).encapsulate(`/webrtc/p2p/${peer.toString()}`);
    const signal = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(UPGRADE_MS)]);
    let connection: Connection | undefined;
    for (let attempt = 1; connection === undefined; attempt++) {
      try {
        // Forced: libp2p would otherwise hand back the relayed connection it has.
        connection = await this.#libp2p.dial(address, { signal, force: true });
      } catch (error) {
        const reason = signal.aborted ? `no ICE path in ${UPGRADE_MS} ms` : messageOf(causeOf(error));
        // A handshake that failed at once (a race of DTLS with the answer) is tried again within the time.
        if (signal.aborted || attempt >= UPGRADE_ATTEMPTS) throw new Error(`hole punching over WebRTC failed (${reason})`);
        this.#log(`p2p: upgrade to ${peer.toString()}, attempt ${attempt} failed (${reason}); trying again`);
        if (this.directTo(peer) !== undefined) return;
      }
    }
    if (isRelayed(connection)) throw new Error('the WebRTC dial came back relayed');
    this.#log(`p2p: ${peer.toString()} upgraded from a relay to ${connection.remoteAddr.toString()}`);
    // Closed gently: a small request running on the relay finishes first. Closing the circuit
    // closes it for the peer too.
    this.#identified.add(connection);
    for (const old of this.#libp2p.getConnections(peer).filter(isRelayed)) void old.close().catch(() => {});
  }
}

/**
 * Whether `connection` is a WebRTC one: the dialler names it by the relay address it was
 * signalled through, the answerer by `/webrtc/p2p/<peer>` alone.
 */
const isWebRtc = (connection: Connection): boolean => connection.remoteAddr.getComponents().some((c) => c.name === 'webrtc');

/** The error an `error` event carries (a data channel's), or `error` itself. */
const causeOf = (error: unknown): unknown => (error instanceof Event && 'error' in error ? error.error : error);
