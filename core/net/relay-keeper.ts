/**
 * A node that is not publicly reachable (reachability.ts says `private`) keeps circuit-relay v2
 * reservations on `relays` reachable peers it is connected to, and so announces their
 * `/p2p-circuit` addresses (libp2p's relay transport adds them, and identify pushes them to its
 * peers). A reservation ends with its connection; when the relay comes back (the node's bootstrap
 * redial, or any new connection to a relay) identify runs again and the keeper reserves anew.
 *
 * It asks for each relay by address (`/…/p2p/<relay>/p2p-circuit`) rather than listening on a bare
 * `/p2p-circuit`: libp2p's own relay search remembers a relay it failed to dial for good, so a relay
 * that restarted was never used again.
 */
import type { ComponentLogger, Connection, IdentifyResult, Libp2p, Logger, PeerId, Startable } from '@libp2p/interface';
import type { TransportManager } from '@libp2p/interface-internal';
import { CODE_P2P, multiaddr } from '@multiformats/multiaddr';
import { Circuit } from '@multiformats/multiaddr-matcher';
import type { Reachability, ReachabilityService } from './reachability.ts';

/** libp2p's relay hop protocol: a peer that serves it can hold reservations. */
export const RELAY_HOP_PROTOCOL = '/libp2p/circuit/relay/0.2.0/hop';
/** Reservations a private node keeps (on distinct relays). */
export const DEFAULT_RELAY_RESERVATIONS = 2;
const RESERVE_ATTEMPTS = 3;
const RETRY_MS = 500;

export interface RelayKeeperComponents {
  readonly transportManager: TransportManager;
  /** libp2p's event bus (its component `events`). */
  readonly events: Pick<Libp2p, 'addEventListener' | 'removeEventListener'>;
  readonly logger: ComponentLogger;
  readonly connectionManager: { getConnections(peer?: PeerId): Connection[] };
  /** The dial-back service, registered as `reachability` (without it the keeper does nothing). */
  readonly reachability?: ReachabilityService;
}

export interface RelayKeeperInit {
  /** Reservations to keep while private (DEFAULT_RELAY_RESERVATIONS). */
  readonly relays?: number;
  readonly log?: (line: string) => void;
}

/** What of libp2p's relay transport the keeper reads: which relays hold a reservation. */
interface ReservationStore {
  hasReservation(peer: PeerId): boolean;
  reservationCount(): number;
}

export class RelayKeeper implements Startable {
  readonly #c: RelayKeeperComponents;
  readonly #wanted: number;
  readonly #log: Logger;
  readonly #report: (line: string) => void;
  /** Relays being asked now. */
  readonly #reserving = new Set<string>();
  /** Connected peers that serve the hop protocol (from identify), by peer id. */
  readonly #relays = new Map<string, Connection>();
  #stopWatching: (() => void) | undefined;
  readonly #onIdentify = (event: CustomEvent<IdentifyResult>): void => {
    const { peerId, protocols, connection } = event.detail;
    // A relay this node dialled is reachable from here at least; one that dialled in may be as
    // private as this node, and a reservation on it no way in for anyone else.
    if (!protocols.includes(RELAY_HOP_PROTOCOL) || connection.direction !== 'outbound' || Circuit.matches(connection.remoteAddr)) return;
    this.#relays.set(peerId.toString(), connection);
    this.#keep();
  };
  readonly #onDisconnect = (event: CustomEvent<PeerId>): void => void this.#relays.delete(event.detail.toString());

  constructor(components: RelayKeeperComponents, init: RelayKeeperInit = {}) {
    this.#c = components;
    this.#wanted = init.relays ?? DEFAULT_RELAY_RESERVATIONS;
    this.#log = components.logger.forComponent('mesh:relay-keeper');
    this.#report = init.log ?? (() => {});
  }

  start(): void {
    this.#c.events.addEventListener('peer:identify', this.#onIdentify);
    this.#c.events.addEventListener('peer:disconnect', this.#onDisconnect);
    this.#stopWatching = this.#c.reachability?.onChange((verdict) => {
      if (verdict === 'private') this.#keep();
    });
  }

  stop(): void {
    this.#c.events.removeEventListener('peer:identify', this.#onIdentify);
    this.#c.events.removeEventListener('peer:disconnect', this.#onDisconnect);
    this.#stopWatching?.();
  }

  get #verdict(): Reachability {
    return this.#c.reachability?.verdict ?? 'unknown';
  }

  #store(): ReservationStore | undefined {
    const transport = this.#c.transportManager.getTransports().find((t) => 'reservationStore' in t) as { reservationStore?: ReservationStore } | undefined;
    return transport?.reservationStore;
  }

  /** Reserves on connected relays until `wanted` are held (or being asked). */
  #keep(): void {
    if (this.#verdict !== 'private') return;
    const store = this.#store();
    if (store === undefined) return;
    for (const [key, connection] of this.#relays) {
      if (store.reservationCount() + this.#reserving.size >= this.#wanted) return;
      if (connection.status !== 'open' || this.#reserving.has(key) || store.hasReservation(connection.remotePeer)) continue;
      this.#reserving.add(key);
      void this.#reserve(store, connection).finally(() => {
        this.#reserving.delete(key);
        // Another relay may take the place of one that refused.
        if (!store.hasReservation(connection.remotePeer)) this.#relays.delete(key);
        this.#keep();
      });
    }
  }

  // libp2p's own relay search may be asking the same relay at the same moment (it does on each
  // connection to one), and then fails both askings at once when it needs no relay: the keeper
  // asks again, a few times, while the connection lasts.
  async #reserve(store: ReservationStore, connection: Connection): Promise<void> {
    const key = connection.remotePeer.toString();
    const address = multiaddr(`${connection.remoteAddr.decapsulateCode(CODE_P2P).toString()}/p2p/${key}/p2p-circuit`);
    for (let attempt = 1; attempt <= RESERVE_ATTEMPTS; attempt++) {
      try {
        await this.#c.transportManager.listen([address]);
        if (store.hasReservation(connection.remotePeer)) {
          this.#report(`p2p: relay reservation on ${key}`);
          return;
        }
      } catch (error) {
        this.#log('no reservation on %s (attempt %d): %e', key, attempt, error);
      }
      if (connection.status !== 'open' || this.#verdict !== 'private') return;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

/** The keeper, as libp2p's `services` takes it (beside `reachability`). */
export function relayKeeper(init: RelayKeeperInit = {}): (components: RelayKeeperComponents) => RelayKeeper {
  return (components) => new RelayKeeper(components, init);
}
