/**
 * The serving side of a network whose peers live in one process (the memory network of the tests,
 * the simulator's network): the RPC handlers and raw stream handlers a node serves, the requests
 * it is serving per requester, and the raw streams open between two endpoints. Each network
 * carries the bytes its own way (at once, or after a simulated latency) and asks its endpoint to
 * answer a request or take a stream once they have arrived, under the same bounds, limits and
 * errors as on libp2p.
 */

import { bytesEqual } from '../encoding/bytes.ts';
import type { Clock } from '../time/clock.ts';
import { MessageTooLargeError, PeerBusyError, PeerUnreachableError, ProtocolNotServedError, RemoteError } from './errors.ts';
import { type MemoryStreamPair, memoryStreamPair } from './memory-stream.ts';
import {
  checkStreamProtocolId,
  DEFAULT_STREAM_LIMIT,
  type PeerInfo,
  type PeerStream,
  type RpcHandler,
  type RpcLimits,
  rpcProtocolId,
  type ServeOptions,
  type StreamHandler,
  type StreamOptions,
} from './network.ts';
import { type Bounds, boundsOf, failureMessage, handlerStops } from './rpc.ts';

interface Served {
  readonly handler: RpcHandler;
  readonly bounds: Bounds;
}

interface ServedStream {
  readonly handler: StreamHandler;
  readonly limit: number;
}

interface OpenStream {
  readonly peer: InProcessEndpoint;
  readonly id: string;
  readonly outbound: boolean;
  readonly pair: MemoryStreamPair;
}

/** A request as the serving endpoint takes it. */
export interface Incoming {
  /** The requesting endpoint, and its NodeId. */
  readonly from: InProcessEndpoint;
  /** The protocol id, and the server's name for messages. */
  readonly id: string;
  readonly name: string;
  readonly data: Uint8Array;
  /** The requester's bound on the answer. */
  readonly bounds: Bounds;
  /** The requester's deadline and signal. */
  readonly signal: AbortSignal;
  /** Aborted when the connection goes; the handler's deadline aborts it too. */
  readonly cut: AbortController;
  /** Rejects once `cut` aborts (lostWhenCut): the request ends then, as a reset stream would end it. */
  readonly lost: Promise<never>;
}

/** A promise that rejects with PeerUnreachableError once `cut` aborts; nobody need handle it. */
export function lostWhenCut(cut: AbortController, name: string, id: string): Promise<never> {
  const lost = new Promise<never>((_, reject) => {
    cut.signal.addEventListener(
      'abort',
      () => reject(new PeerUnreachableError(`the stream to ${name} on ${id} ended before its answer: ${(cut.signal.reason as Error).message}`)),
      { once: true },
    );
  });
  lost.catch(() => {});
  return lost;
}

export class InProcessEndpoint {
  readonly self: Uint8Array;
  readonly #served = new Map<string, Served>();
  /** Requests being served, by requester and protocol id. */
  readonly #serving = new Map<InProcessEndpoint, Map<string, number>>();
  readonly #streamServed = new Map<string, ServedStream>();
  readonly #streams = new Set<OpenStream>();

  constructor(self: Uint8Array) {
    this.self = self;
  }

  serve(protocol: string, handler: RpcHandler, options: ServeOptions = {}): () => void {
    const id = rpcProtocolId(protocol);
    const served: Served = { handler, bounds: boundsOf(options) };
    this.#served.set(id, served);
    return () => {
      if (this.#served.get(id) === served) this.#served.delete(id);
    };
  }

  serveStream(protocol: string, handler: StreamHandler, options: StreamOptions = {}): () => void {
    const id = checkStreamProtocolId(protocol);
    const served: ServedStream = { handler, limit: options.maxStreams ?? DEFAULT_STREAM_LIMIT };
    this.#streamServed.set(id, served);
    return () => {
      if (this.#streamServed.get(id) === served) this.#streamServed.delete(id);
    };
  }

  /**
   * Takes a request that has arrived: refuses it as libp2p would (not served, too large, too many
   * in flight from this requester), runs the handler under its deadline on `clock`, and resolves
   * with the answer within both sides' bounds, or fails as the requester would hear it.
   * `arrived` runs once the request is counted, before the handler: where a network hands the
   * request over (the memory network, in a later task).
   */
  async answer(request: Incoming, clock: Clock, limits: RpcLimits, arrived: () => Promise<void> = async () => {}): Promise<Uint8Array> {
    const { from, id, name, data, cut, lost } = request;
    const served = this.#served.get(id);
    if (served === undefined) throw new ProtocolNotServedError(name, id);
    if (data.length > served.bounds.maxRequestBytes) {
      throw new MessageTooLargeError('request-too-large', `${name} takes requests of at most ${served.bounds.maxRequestBytes} bytes on ${id}`);
    }
    const counts = this.#serving.get(from) ?? new Map<string, number>();
    const open = counts.get(id) ?? 0;
    if (open >= limits.streams) throw new PeerBusyError(`${name} already has ${open} requests in flight on ${id}, as many as it takes`);
    counts.set(id, open + 1);
    this.#serving.set(from, counts);
    const deadline = clock.setTimeout(() => cut.abort(handlerStops.deadline(limits.handlerMs)), limits.handlerMs);
    try {
      await Promise.race([arrived(), lost]);
      const handled = Promise.resolve()
        .then(() => served.handler({ peer: from.self, data: data.slice(), signal: AbortSignal.any([request.signal, cut.signal]) }))
        .then(
          (answer) => ({ answer }),
          (error: unknown) => ({ error }),
        );
      const outcome = await Promise.race([handled, lost]);
      if ('error' in outcome) {
        if (outcome.error instanceof PeerBusyError) throw new PeerBusyError(`${name} refused the request on ${id}: ${failureMessage(outcome.error)}`);
        throw new RemoteError('remote-failed', `${name} failed on ${id}: ${failureMessage(outcome.error)}`);
      }
      const bound = Math.min(served.bounds.maxResponseBytes, request.bounds.maxResponseBytes);
      if (outcome.answer.length > bound) {
        throw new MessageTooLargeError('response-too-large', `an answer of ${outcome.answer.length} bytes from ${name} on ${id} is over the bound of ${bound}`);
      }
      return outcome.answer.slice();
    } finally {
      deadline.cancel();
      const left = (counts.get(id) ?? 1) - 1;
      if (left > 0) counts.set(id, left);
      else counts.delete(id);
      if (counts.size === 0) this.#serving.delete(from);
    }
  }

  /**
   * Opens a raw stream from `opener` to this endpoint on protocol `id`, once the two have agreed
   * on it: the opener's end, or ProtocolNotServedError, or PeerBusyError past the opener's limit.
   * Past this endpoint's own limit the stream is reset, as libp2p does.
   */
  accept(opener: InProcessEndpoint, id: string, name: string, options: StreamOptions = {}): PeerStream {
    const served = this.#streamServed.get(id);
    if (served === undefined) throw new ProtocolNotServedError(name, id);
    const limit = options.maxStreams ?? DEFAULT_STREAM_LIMIT;
    if (opener.#count(this, id, true) >= limit) throw new PeerBusyError(`${limit} streams to ${name} on ${id} are already open, as many as this node opens`);
    const pair = memoryStreamPair(opener.self, this.self);
    const mine: OpenStream = { peer: this, id, outbound: true, pair };
    const theirs: OpenStream = { peer: opener, id, outbound: false, pair };
    opener.#streams.add(mine);
    this.#streams.add(theirs);
    void pair.over.then(() => {
      opener.#streams.delete(mine);
      this.#streams.delete(theirs);
    });
    if (this.#count(opener, id, false) > served.limit) pair.server.reset(new Error(`too many inbound streams on ${id}`));
    else {
      try {
        served.handler(pair.server);
      } catch {
        pair.server.reset();
      }
    }
    return pair.opener;
  }

  /** Resets every stream open with `peer` (its connection went). */
  cutStreams(peer: InProcessEndpoint, reason: string): void {
    for (const stream of this.#streams) if (stream.peer === peer) stream.pair.cut(reason);
  }

  /** Raw streams open, either way. */
  get openStreams(): number {
    return this.#streams.size;
  }

  #count(peer: InProcessEndpoint, id: string, outbound: boolean): number {
    let count = 0;
    for (const s of this.#streams) if (s.peer === peer && s.id === id && s.outbound === outbound) count++;
    return count;
  }
}

/** A connected peer as an in-process network keeps it: who dialled, since when, what it announced. */
interface Connection {
  readonly direction: 'inbound' | 'outbound';
  readonly since: number;
  height: number | null;
}

/** The connections of one in-process network, for `Network.peers()`, keyed by the peer's network object. */
export class Connections<P extends { readonly self: Uint8Array }> {
  readonly #open = new Map<P, Connection>();

  /** A new connection; a second one to the same peer is ignored. Returns whether it was new. */
  add(peer: P, direction: 'inbound' | 'outbound', since: number): boolean {
    if (this.#open.has(peer)) return false;
    this.#open.set(peer, { direction, since, height: null });
    return true;
  }

  delete(peer: P): void {
    this.#open.delete(peer);
  }

  /** Records the height `node` announced, if it is connected. */
  reportHeight(node: Uint8Array, height: number): void {
    this.#open.forEach((connection, peer) => {
      if (bytesEqual(peer.self, node)) connection.height = height;
    });
  }

  /** The connected peers, each listening at and reached through `address(peer)`. */
  peers(address: (peer: P) => string): PeerInfo[] {
    return [...this.#open].map(([peer, c]) => {
      const at = address(peer);
      // In one process there are no relays: every link is direct.
      return { node: peer.self, height: c.height, multiaddrs: [at], remoteAddr: at, direction: c.direction, connectedSince: c.since, relayed: false };
    });
  }
}
