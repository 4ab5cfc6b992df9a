/**
 * Whether this node is publicly reachable, the AutoNAT question, answered by dial-back: the node
 * asks each peer it meets (over a direct connection) to open a new connection to the TCP port it
 * listens on, at the address the peer sees it come from. A peer that can is proof the node is
 * reachable; a peer that cannot, with none that can, means a NAT or a firewall is in the way.
 *
 * libp2p's AutoNAT v1 (@libp2p/autonat) asks the same, but never about private or reserved
 * addresses (198.18.0.0/15 and the LAN ranges among them), and it confirms an observed address
 * only from four peers in four distinct /8 networks and denies it from eight: a small mesh, a LAN
 * or a lab never reaches a verdict. docs/network.md, "Through NATs".
 *
 * The peer dials only the address the request came from, so it cannot be made to dial a third
 * party; it serves one request per peer a minute and a few at once, and refuses the rest.
 */
import type { ComponentLogger, Connection, IdentifyResult, Libp2p, Logger, PeerId, Startable, Stream } from '@libp2p/interface';
import type { ConnectionManager, Registrar, TransportManager } from '@libp2p/interface-internal';
import { lpStream } from '@libp2p/utils';
import { type Multiaddr, multiaddr } from '@multiformats/multiaddr';
import { Circuit } from '@multiformats/multiaddr-matcher';

export type Reachability = 'public' | 'private' | 'unknown';

export const DIAL_BACK_PROTOCOL = '/mesh/dial-back/1.0.0';

export const REACHABILITY_LIMITS = Object.freeze({
  /** How long the peer tries to connect back before it answers that it cannot. */
  dialBackMs: 3_000,
  /** A verdict older than this is asked again of the next peer met. */
  recheckMs: 10 * 60_000,
  /** A peer answers one request of the same requester in this time, and refuses the rest. */
  perRequesterMs: 60_000,
  /** Dial-backs a node makes for others at once. */
  concurrentDialBacks: 4,
  /** The answers kept (the most recent, one per peer). */
  answersKept: 8,
});

const STATUS = { reachable: 0, unreachable: 1, refused: 2 } as const;

export interface ReachabilityComponents {
  readonly registrar: Registrar;
  readonly connectionManager: ConnectionManager;
  readonly transportManager: TransportManager;
  /** libp2p's event bus (its component `events`). */
  readonly events: Pick<Libp2p, 'addEventListener' | 'removeEventListener'>;
  readonly logger: ComponentLogger;
}

export interface ReachabilityInit {
  /** Told each time the verdict changes, with the reason. */
  readonly log?: (line: string) => void;
}

export class ReachabilityService implements Startable {
  readonly #c: ReachabilityComponents;
  readonly #log: Logger;
  readonly #report: (line: string) => void;
  /** The latest answer of each peer asked: reachable or not, and when. */
  readonly #answers = new Map<string, { reachable: boolean; at: number }>();
  readonly #asking = new Set<string>();
  readonly #served = new Map<string, number>();
  readonly #listeners = new Set<(verdict: Reachability) => void>();
  #dialingBack = 0;
  #verdict: Reachability = 'unknown';
  readonly #onIdentify = (event: CustomEvent<IdentifyResult>): void => this.#maybeAsk(event.detail);

  constructor(components: ReachabilityComponents, init: ReachabilityInit = {}) {
    this.#c = components;
    this.#log = components.logger.forComponent('mesh:reachability');
    this.#report = init.log ?? (() => {});
  }

  get verdict(): Reachability {
    return this.#verdict;
  }

  /** Calls `listener` with each new verdict; returns the way to stop. */
  onChange(listener: (verdict: Reachability) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async start(): Promise<void> {
    await this.#c.registrar.handle(DIAL_BACK_PROTOCOL, (stream, connection) => void this.#serve(stream, connection), {
      maxInboundStreams: 1,
      maxOutboundStreams: 1,
    });
    this.#c.events.addEventListener('peer:identify', this.#onIdentify);
  }

  async stop(): Promise<void> {
    this.#c.events.removeEventListener('peer:identify', this.#onIdentify);
    await this.#c.registrar.unhandle(DIAL_BACK_PROTOCOL);
  }

  /** The TCP port this node listens on (the first), or null without one. */
  #tcpPort(): number | null {
    for (const address of this.#c.transportManager.getAddrs()) {
      const parts = address.getComponents();
      if (parts.length === 2 && (parts[0]!.name === 'ip4' || parts[0]!.name === 'ip6') && parts[1]!.name === 'tcp') return Number(parts[1]!.value);
    }
    return null;
  }

  #maybeAsk(identified: IdentifyResult): void {
    const { peerId, protocols, connection } = identified;
    const key = peerId.toString();
    if (!protocols.includes(DIAL_BACK_PROTOCOL) || Circuit.matches(connection.remoteAddr) || this.#asking.has(key)) return;
    const port = this.#tcpPort();
    if (port === null) return;
    const now = Date.now();
    const freshest = Math.max(0, ...[...this.#answers.values()].map((a) => a.at));
    const mine = this.#answers.get(key);
    // One fresh answer settles the question until it is old, unless there is none that says yes.
    if (mine !== undefined && now - mine.at < REACHABILITY_LIMITS.recheckMs) return;
    if (this.#verdict === 'public' && now - freshest < REACHABILITY_LIMITS.recheckMs) return;
    this.#asking.add(key);
    this.#ask(peerId, connection, port)
      .then((reachable) => {
        if (reachable === null) return;
        this.#answers.delete(key);
        this.#answers.set(key, { reachable, at: Date.now() });
        if (this.#answers.size > REACHABILITY_LIMITS.answersKept) this.#answers.delete(this.#answers.keys().next().value!);
        this.#decide(`${key} ${reachable ? 'connected back to' : 'could not connect back to'} TCP port ${port}`);
      })
      .catch((error: unknown) => this.#log('asking %p failed: %e', peerId, error))
      .finally(() => this.#asking.delete(key));
  }

  /** true or false as the peer answered; null when it refused or did not answer. */
  async #ask(peer: PeerId, connection: Connection, port: number): Promise<boolean | null> {
    const signal = AbortSignal.timeout(REACHABILITY_LIMITS.dialBackMs + 5_000);
    const stream = await connection.newStream(DIAL_BACK_PROTOCOL, { signal });
    try {
      const lp = lpStream(stream, { maxDataLength: 8 });
      await lp.write(Uint8Array.of(port >> 8, port & 0xff), { signal });
      const answer = (await lp.read({ signal })).subarray();
      await stream.close({ signal });
      if (answer[0] === STATUS.reachable) return true;
      if (answer[0] === STATUS.unreachable) return false;
      this.#log('%p refused to dial back', peer);
      return null;
    } catch (error) {
      stream.abort(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
  }

  #decide(why: string): void {
    const answers = [...this.#answers.values()];
    const verdict: Reachability = answers.some((a) => a.reachable) ? 'public' : answers.length > 0 ? 'private' : 'unknown';
    if (verdict === this.#verdict) return;
    this.#verdict = verdict;
    this.#report(`p2p: reachability ${verdict} (${why})`);
    for (const listener of this.#listeners) listener(verdict);
  }

  async #serve(stream: Stream, connection: Connection): Promise<void> {
    const signal = AbortSignal.timeout(REACHABILITY_LIMITS.dialBackMs + 5_000);
    const lp = lpStream(stream, { maxDataLength: 8 });
    try {
      const request = (await lp.read({ signal })).subarray();
      const status = request.length === 2 ? await this.#dialBack(connection, (request[0]! << 8) | request[1]!) : STATUS.refused;
      await lp.write(Uint8Array.of(status), { signal });
      await stream.close({ signal });
    } catch (error) {
      stream.abort(error instanceof Error ? error : new Error(String(error)));
    }
  }

  async #dialBack(connection: Connection, port: number): Promise<number> {
    const key = connection.remotePeer.toString();
    const now = Date.now();
    const ip = connection.remoteAddr.getComponents()[0];
    if (port === 0 || Circuit.matches(connection.remoteAddr) || (ip?.name !== 'ip4' && ip?.name !== 'ip6')) return STATUS.refused;
    const last = this.#served.get(key);
    if ((last !== undefined && now - last < REACHABILITY_LIMITS.perRequesterMs) || this.#dialingBack >= REACHABILITY_LIMITS.concurrentDialBacks) {
      return STATUS.refused;
    }
    this.#served.delete(key);
    this.#served.set(key, now);
    for (const [peer, at] of this.#served) {
      if (now - at < REACHABILITY_LIMITS.perRequesterMs) break;
      this.#served.delete(peer);
    }
    const target: Multiaddr = multiaddr(`/${ip.name}/${ip.value}/tcp/${port}/p2p/${key}`);
    this.#dialingBack++;
    try {
      // A new connection, not the one the request came on: `force` skips libp2p's reuse of it.
      const back = await this.#c.connectionManager.openConnection(target, { force: true, signal: AbortSignal.timeout(REACHABILITY_LIMITS.dialBackMs) });
      await back.close().catch(() => {});
      return STATUS.reachable;
    } catch (error) {
      this.#log('could not dial back %a: %e', target, error);
      return STATUS.unreachable;
    } finally {
      this.#dialingBack--;
    }
  }
}

/** The dial-back service, as libp2p's `services` takes it. */
export function reachability(init: ReachabilityInit = {}): (components: ReachabilityComponents) => ReachabilityService {
  return (components) => new ReachabilityService(components, init);
}
