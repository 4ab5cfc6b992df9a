/**
 * Directed messages travel on lanes: one stream per pair of nodes and direction
 * (`/mesh/app/1/messages`), opened by the sender when it first sends and kept while it is used.
 * The sender writes AppMessage frames back to back, without waiting; the receiver answers each
 * with an AppAck frame, in the same order (core/net/frames.ts). So messages from one node to
 * another arrive in the order they were sent, and a message costs no stream of its own: no
 * protocol negotiation, no stream set up and torn down, and many frames in one write.
 *
 * A lane that breaks (a reset, a lost connection, an acknowledgement overdue) fails every
 * message still waiting on it: those may or may not have been queued. The next send opens a new
 * lane. A lane with nothing waiting for a minute is closed.
 */
import { decode } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError } from '../errors.ts';
import { PeerBusyError, PeerUnreachableError, RemoteError, RequestTimeoutError } from '../net/errors.ts';
import { FrameReader, framesOf } from '../net/frames.ts';
import { streamProtocolId, type Network, type PeerStream } from '../net/network.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { appAckCodec, MAX_FRAME_BYTES, type AppAck } from './wire.ts';

/** The lanes' stream protocol. */
export const MESSAGE_STREAM = streamProtocolId('app', 'messages');
/** Bytes of messages one lane may have waiting for their acknowledgements (503 past it). */
export const LANE_MAX_WAITING_BYTES = 16 * 1024 * 1024;
/** A lane with nothing waiting is closed after this long unused. */
export const LANE_IDLE_MS = 60_000;
/** Lanes from one peer a node serves at once (a sender keeps one). */
const LANES_PER_PEER = 4;

/** What a send came to: the acknowledgements of its first messages, in order, and why the rest have none. */
export interface LaneOutcome {
  readonly acks: AppAck[];
  /** Null when every message was acknowledged. */
  readonly error: Error | null;
}

interface Waiting {
  readonly bytes: number;
  readonly ack: (ack: AppAck) => void;
  readonly fail: (error: Error) => void;
}

interface Lane {
  readonly peer: Uint8Array;
  readonly stream: PeerStream;
  /** Messages written or to be written, oldest first: acknowledgements come in this order. */
  readonly waiting: Waiting[];
  /** Index of the oldest in `waiting` (acknowledged ones before it are dropped in bulk). */
  head: number;
  waitingBytes: number;
  /** Frames not yet handed to the stream. */
  readonly unwritten: Uint8Array[];
  writing: boolean;
  usedAt: number;
  /** Broken, or closed for being idle: no longer used. */
  ended: boolean;
}

export interface LanesOptions {
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

/** Handles one message that arrived on a lane; returns its AppAck's bytes, or throws DecodeError for one that is not a message. */
export type LaneHandler = (peer: Uint8Array, message: Uint8Array) => Uint8Array;

export class MessageLanes {
  readonly #o: LanesOptions;
  readonly #lanes = new Map<string, Lane>();
  readonly #opening = new Map<string, Promise<Lane>>();
  readonly #served = new Set<PeerStream>();
  #sweep: Timer | null = null;
  #stopped = false;

  constructor(options: LanesOptions) {
    this.#o = options;
  }

  /**
   * Sends `messages` (encoded AppMessages) to `peer` on its lane, in order, and resolves once each
   * is acknowledged, or once the lane fails (then `error` says why, and the messages after the
   * acknowledged ones may or may not have been queued). Fails at once, sending nothing, with
   * PeerBusyError when the lane holds too much already, and with the errors of opening a stream.
   */
  async send(peer: Uint8Array, messages: readonly Uint8Array[], timeoutMs: number): Promise<LaneOutcome> {
    if (messages.length === 0) return { acks: [], error: null };
    const lane = await this.#lane(peer);
    // It broke while it was being opened.
    if (lane.ended) throw new PeerUnreachableError(`the message lane to ${toHex(peer)} broke as it opened`);
    let bytes = 0;
    for (const message of messages) bytes += message.length;
    if (lane.waitingBytes > 0 && lane.waitingBytes + bytes > LANE_MAX_WAITING_BYTES) {
      throw new PeerBusyError(`${lane.waitingBytes} bytes of messages to ${toHex(peer)} wait for their acknowledgement, as many as this node sends ahead`);
    }
    const acks: AppAck[] = [];
    return new Promise<LaneOutcome>((resolve) => {
      let settled = false;
      const settle = (error: Error | null): void => {
        if (settled) return;
        settled = true;
        timer.cancel();
        resolve({ acks, error });
      };
      const timer = this.#o.clock.setTimeout(() => this.#fail(lane, new RequestTimeoutError(toHex(peer), MESSAGE_STREAM, timeoutMs)), timeoutMs);
      for (const message of messages) {
        lane.waiting.push({
          bytes: message.length,
          ack: (ack) => {
            acks.push(ack);
            if (acks.length === messages.length) settle(null);
          },
          fail: (error) => settle(error),
        });
        lane.unwritten.push(message);
      }
      lane.waitingBytes += bytes;
      lane.usedAt = this.#o.clock.now();
      this.#write(lane);
    });
  }

  /** Serves the lanes peers open to this node with `handler`; returns what stops serving them. */
  serve(handler: LaneHandler): () => void {
    return this.#o.network.serveStream(MESSAGE_STREAM, (stream) => void this.#receive(stream, handler), { maxStreams: LANES_PER_PEER });
  }

  /** Closes every lane: what waits on one fails. */
  stop(): void {
    this.#stopped = true;
    this.#sweep?.cancel();
    for (const lane of [...this.#lanes.values()]) this.#fail(lane, new PeerUnreachableError('this node stopped'));
    for (const stream of this.#served) stream.reset(new Error('the node stopped'));
  }

  /** Lanes open to peers now. */
  get open(): number {
    return this.#lanes.size;
  }

  // ---- the sending side ----

  async #lane(peer: Uint8Array): Promise<Lane> {
    if (this.#stopped) throw new PeerUnreachableError('this node stopped');
    const key = toHex(peer);
    const lane = this.#lanes.get(key);
    if (lane !== undefined) return lane;
    let opening = this.#opening.get(key);
    if (opening === undefined) {
      opening = this.#open(peer, key).finally(() => this.#opening.delete(key));
      this.#opening.set(key, opening);
    }
    return opening;
  }

  async #open(peer: Uint8Array, key: string): Promise<Lane> {
    const stream = await this.#o.network.openStream(peer, MESSAGE_STREAM, { maxStreams: LANES_PER_PEER });
    const lane: Lane = { peer, stream, waiting: [], head: 0, waitingBytes: 0, unwritten: [], writing: false, usedAt: this.#o.clock.now(), ended: false };
    if (this.#stopped) {
      stream.reset(new Error('the node stopped'));
      throw new PeerUnreachableError('this node stopped');
    }
    this.#lanes.set(key, lane);
    void this.#readAcks(lane);
    this.#sweep ??= this.#o.clock.setInterval(() => this.#closeIdle(), LANE_IDLE_MS / 2);
    return lane;
  }

  // Hands the unwritten frames to the stream, many in one chunk, while it takes them.
  #write(lane: Lane): void {
    if (lane.writing) return;
    lane.writing = true;
    void (async () => {
      try {
        while (lane.unwritten.length > 0 && !lane.ended) await lane.stream.write(framesOf(lane.unwritten.splice(0)));
      } catch (error) {
        this.#fail(lane, new PeerUnreachableError(`the message lane to ${toHex(lane.peer)} broke: ${messageOf(error)}`));
      } finally {
        lane.writing = false;
      }
    })();
  }

  async #readAcks(lane: Lane): Promise<void> {
    const frames = new FrameReader(MAX_FRAME_BYTES);
    const name = toHex(lane.peer);
    try {
      for await (const chunk of lane.stream) {
        for (const frame of frames.push(chunk)) {
          const waiting = lane.waiting[lane.head];
          if (waiting === undefined) throw new RemoteError('bad-response', `${name} acknowledged a message it was not sent`);
          let ack: AppAck;
          try {
            ack = decode(appAckCodec, frame);
          } catch (error) {
            if (error instanceof DecodeError) throw new RemoteError('bad-response', `${name} answered something that is not an acknowledgement: ${error.message}`);
            throw error;
          }
          lane.head++;
          lane.waitingBytes -= waiting.bytes;
          waiting.ack(ack);
        }
        if (lane.head > 1024 && lane.head * 2 > lane.waiting.length) {
          lane.waiting.splice(0, lane.head);
          lane.head = 0;
        }
      }
      this.#fail(lane, new PeerUnreachableError(`${name} closed the message lane`));
    } catch (error) {
      this.#fail(lane, error instanceof RemoteError || error instanceof RequestTimeoutError ? error : new PeerUnreachableError(`the message lane to ${name} broke: ${messageOf(error)}`));
    }
  }

  /** Ends `lane` (once): what waits on it fails with `error`, and the next send opens another. */
  #fail(lane: Lane, error: Error): void {
    if (lane.ended) return;
    lane.ended = true;
    const key = toHex(lane.peer);
    if (this.#lanes.get(key) === lane) this.#lanes.delete(key);
    lane.stream.reset(error);
    const waiting = lane.waiting.splice(lane.head);
    lane.head = 0;
    lane.waitingBytes = 0;
    lane.unwritten.length = 0;
    for (const w of waiting) w.fail(error);
  }

  #closeIdle(): void {
    const cutoff = this.#o.clock.now() - LANE_IDLE_MS;
    for (const [key, lane] of this.#lanes) {
      if (lane.waiting.length > lane.head || lane.unwritten.length > 0 || lane.usedAt > cutoff) continue;
      // No longer handed out (nor failed when its reading ends): the peer answers the close with its own.
      this.#lanes.delete(key);
      lane.ended = true;
      lane.stream.closeWrite().catch(() => {});
    }
    if (this.#lanes.size === 0) {
      this.#sweep?.cancel();
      this.#sweep = null;
    }
  }

  // ---- the receiving side ----

  async #receive(stream: PeerStream, handler: LaneHandler): Promise<void> {
    this.#served.add(stream);
    const frames = new FrameReader(MAX_FRAME_BYTES);
    try {
      for await (const chunk of stream) {
        const acks = frames.push(chunk).map((frame) => handler(stream.peer, frame));
        // Read no further until the sender takes the acknowledgements: a sender that does not read them is held back.
        if (acks.length > 0) await stream.write(framesOf(acks));
      }
      await stream.closeWrite();
    } catch (error) {
      if (error instanceof DecodeError) {
        this.#o.log(`messaging: ${toHex(stream.peer).slice(0, 16)}… sent a lane frame that is not a message (${error.message}); lane reset`);
        this.#o.network.penalise(stream.peer, 'a message lane frame that is not a message');
      }
      stream.reset(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.#served.delete(stream);
    }
  }
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
