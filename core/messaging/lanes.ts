/**
 * Directed messages travel on lanes: one stream per pair of nodes and direction
 * (`/mesh/app/1/messages`), opened by the sender when it first sends and kept while it is used.
 * The sender writes AppMessage frames back to back, without waiting; the receiver answers each
 * with an AppAck frame, in the same order (core/net/frames.ts). So messages from one node to
 * another arrive in the order they were sent, and a message costs no stream of its own: no
 * protocol negotiation, no stream set up and torn down, and many frames in one write.
 *
 * The spec's wire form, one RPC `app.message` per message, stays served, and is what a node
 * sends to a peer that serves no lanes (one message at a time, in order).
 *
 * A lane that breaks (a reset, a lost connection, an acknowledgement overdue) fails every
 * message still waiting on it: those may or may not have been queued. The next send opens a new
 * lane. A lane with nothing waiting for a minute is closed; a served lane that brings no message
 * for twice that is reset.
 */
import { toHex } from '../encoding/hex.ts';
import { DecodeError, messageOf } from '../errors.ts';
import { PeerBusyError, PeerUnreachableError, ProtocolNotServedError, RemoteError, RequestTimeoutError, StreamResetError } from '../net/errors.ts';
import { FrameReader, framesOf } from '../net/frames.ts';
import { type Network, type PeerStream, type RpcRequest, streamProtocolId } from '../net/network.ts';
import { withDeadline } from '../net/rpc.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { type AppAck, answerOf, appAckCodec, MAX_FRAME_BYTES, MESSAGING_RPC } from './wire.ts';

/** The lanes' stream protocol. */
export const MESSAGE_STREAM = streamProtocolId('app', 'messages');
/** Bytes of messages one lane may have waiting for their acknowledgements (503 past it): two full batches. */
export const LANE_MAX_WAITING_BYTES = 8 * 1024 * 1024;
/** A lane with nothing waiting is closed after this long unused. */
export const LANE_IDLE_MS = 60_000;
/** A served lane that brings no whole message for this long is reset (its sender closes it idle sooner). */
export const SERVED_LANE_IDLE_MS = 2 * LANE_IDLE_MS;
/** Opening a lane gives up after this long (each send waiting for it keeps its own, shorter, deadline). */
const OPEN_TIMEOUT_MS = 30_000;
/** A lane closed for being idle is reset if the peer has not closed its side this long after. */
const CLOSE_GRACE_MS = 10_000;
/** Lanes from one peer a node serves at once (a sender keeps one, and a few closing). */
export const LANES_PER_PEER = 4;

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
  readonly waiting: (Waiting | undefined)[];
  /** Index of the oldest in `waiting` (acknowledged ones before it are cleared, and dropped in bulk). */
  head: number;
  waitingBytes: number;
  /** Frames not yet handed to the stream. */
  readonly unwritten: Uint8Array[];
  writing: boolean;
  usedAt: number;
  /** Broken, or closed for being idle: no longer used. */
  ended: boolean;
}

interface ServedLane {
  readonly stream: PeerStream;
  lastMessageAt: number;
}

export interface LanesOptions {
  readonly network: Network;
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

/** Handles one message that arrived (on a lane or as an RPC); returns its AppAck's bytes, or throws DecodeError for one that is not a message. */
export type LaneHandler = (peer: Uint8Array, message: Uint8Array) => Uint8Array;

export class MessageLanes {
  readonly #o: LanesOptions;
  readonly #lanes = new Map<string, Lane>();
  readonly #opening = new Map<string, Promise<Lane | null>>();
  readonly #closing = new Set<Lane>();
  readonly #served = new Set<ServedLane>();
  #sweep: Timer | null = null;
  #stopped = false;

  constructor(options: LanesOptions) {
    this.#o = options;
  }

  /**
   * Sends `messages` (encoded AppMessages) to `peer`, in order, and resolves once each is
   * acknowledged, or once the lane fails or `timeoutMs` (counted from the call, opening the lane
   * included) passes: then `error` says why, and the messages after the acknowledged ones may or
   * may not have been queued. Fails at once, sending nothing, with PeerBusyError when the lane
   * holds too much already, and with the errors of reaching the peer.
   */
  async send(peer: Uint8Array, messages: readonly Uint8Array[], timeoutMs: number): Promise<LaneOutcome> {
    if (messages.length === 0) return { acks: [], error: null };
    const started = this.#o.clock.now();
    const lane = await withDeadline(this.#o.clock, toHex(peer), MESSAGE_STREAM, { timeoutMs }, () => this.#lane(peer));
    if (lane === null) return this.#sendByRpc(peer, messages, started, timeoutMs);
    // It broke while it was being opened.
    if (lane.ended) throw new PeerUnreachableError(`the message lane to ${toHex(peer)} broke as it opened`);
    let bytes = 0;
    for (const message of messages) bytes += message.length;
    if (lane.waitingBytes > 0 && lane.waitingBytes + bytes > LANE_MAX_WAITING_BYTES) {
      throw new PeerBusyError(`${lane.waitingBytes} bytes of messages to ${toHex(peer)} wait for their acknowledgement, as many as this node sends ahead`);
    }
    const acks: AppAck[] = [];
    const count = messages.length;
    return new Promise<LaneOutcome>((resolve) => {
      let settled = false;
      const settle = (error: Error | null): void => {
        if (settled) return;
        settled = true;
        timer.cancel();
        resolve({ acks, error });
      };
      const left = Math.max(0, started + timeoutMs - this.#o.clock.now());
      const timer = this.#o.clock.setTimeout(() => this.#fail(lane, new RequestTimeoutError(toHex(peer), MESSAGE_STREAM, timeoutMs)), left);
      for (const message of messages) {
        lane.waiting.push({
          bytes: message.length,
          ack: (ack) => {
            acks.push(ack);
            if (acks.length === count) settle(null);
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

  /** Serves lanes, and the RPC `app.message`, with `handler`; returns what stops serving them. */
  serve(handler: LaneHandler): () => void {
    const { network } = this.#o;
    const unserveRpc = network.serve(MESSAGING_RPC.message, async ({ peer, data }: RpcRequest) => handler(peer, data), {
      maxRequestBytes: MAX_FRAME_BYTES,
      maxResponseBytes: MAX_FRAME_BYTES,
      relayed: true,
    });
    const unserveLanes = network.serveStream(MESSAGE_STREAM, (stream) => void this.#receive(stream, handler), { maxStreams: LANES_PER_PEER, relayed: true });
    return () => {
      unserveRpc();
      unserveLanes();
    };
  }

  /** Closes every lane: what waits on one fails. */
  stop(): void {
    this.#stopped = true;
    this.#sweep?.cancel();
    this.#sweep = null;
    for (const lane of [...this.#lanes.values()]) this.#fail(lane, new PeerUnreachableError('this node stopped'));
    for (const lane of this.#closing) lane.stream.reset(new Error('the node stopped'));
    for (const served of this.#served) served.stream.reset(new Error('the node stopped'));
  }

  /** Lanes open to peers now. */
  get open(): number {
    return this.#lanes.size;
  }

  // ---- the sending side ----

  /** The peer's lane, opened if need be; null when the peer serves no lanes. */
  async #lane(peer: Uint8Array): Promise<Lane | null> {
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

  async #open(peer: Uint8Array, key: string): Promise<Lane | null> {
    let stream: PeerStream;
    try {
      // Its own deadline: the opening is shared by every send that waits for it.
      const open = (signal: AbortSignal): Promise<PeerStream> =>
        this.#o.network.openStream(peer, MESSAGE_STREAM, { maxStreams: LANES_PER_PEER, relayed: true, signal });
      stream = await withDeadline(this.#o.clock, key, MESSAGE_STREAM, { timeoutMs: OPEN_TIMEOUT_MS }, open);
    } catch (error) {
      if (error instanceof ProtocolNotServedError) return null;
      throw error;
    }
    const lane: Lane = { peer, stream, waiting: [], head: 0, waitingBytes: 0, unwritten: [], writing: false, usedAt: this.#o.clock.now(), ended: false };
    if (this.#stopped) {
      stream.reset(new Error('the node stopped'));
      throw new PeerUnreachableError('this node stopped');
    }
    this.#lanes.set(key, lane);
    void this.#readAcks(lane);
    this.#startSweep();
    return lane;
  }

  /** The spec's wire form, for a peer without lanes: one RPC a message, in order, until one fails. */
  async #sendByRpc(peer: Uint8Array, messages: readonly Uint8Array[], started: number, timeoutMs: number): Promise<LaneOutcome> {
    const acks: AppAck[] = [];
    for (const message of messages) {
      const left = started + timeoutMs - this.#o.clock.now();
      if (left <= 0) return { acks, error: new RequestTimeoutError(toHex(peer), MESSAGING_RPC.message, timeoutMs) };
      try {
        const answer = await this.#o.network.request(peer, MESSAGING_RPC.message, message, {
          timeoutMs: left,
          maxRequestBytes: MAX_FRAME_BYTES,
          maxResponseBytes: MAX_FRAME_BYTES,
          relayed: true,
        });
        acks.push(answerOf(appAckCodec, peer, answer));
      } catch (error) {
        return { acks, error: error instanceof Error ? error : new Error(String(error)) };
      }
    }
    return { acks, error: null };
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
          const ack = answerOf(appAckCodec, lane.peer, frame);
          // Cleared at once: what an acknowledged message held is not kept until the next compaction.
          lane.waiting[lane.head++] = undefined;
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
      this.#fail(
        lane,
        error instanceof RemoteError || error instanceof RequestTimeoutError
          ? error
          : new PeerUnreachableError(`the message lane to ${name} broke: ${messageOf(error)}`),
      );
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
    for (const w of waiting) w?.fail(error);
  }

  #startSweep(): void {
    this.#sweep ??= this.#o.clock.setInterval(() => this.#closeIdle(), LANE_IDLE_MS / 2);
  }

  #closeIdle(): void {
    const now = this.#o.clock.now();
    for (const [key, lane] of this.#lanes) {
      if (lane.waiting.length > lane.head || lane.unwritten.length > 0 || lane.usedAt > now - LANE_IDLE_MS) continue;
      // No longer handed out (nor failed when its reading ends): the peer answers the close with
      // its own, or the lane is reset after a grace.
      this.#lanes.delete(key);
      lane.ended = true;
      this.#closing.add(lane);
      const grace = this.#o.clock.setTimeout(() => lane.stream.reset(new Error('the peer did not close the lane')), CLOSE_GRACE_MS);
      const closed = (): void => {
        grace.cancel();
        this.#closing.delete(lane);
      };
      lane.stream.closed.then(closed, closed);
      lane.stream.closeWrite().catch(() => {});
    }
    for (const served of this.#served) {
      if (served.lastMessageAt <= now - SERVED_LANE_IDLE_MS) served.stream.reset(new Error(`no message in ${SERVED_LANE_IDLE_MS / 1000} s`));
    }
    if (this.#lanes.size === 0 && this.#served.size === 0) {
      this.#sweep?.cancel();
      this.#sweep = null;
    }
  }

  // ---- the receiving side ----

  async #receive(stream: PeerStream, handler: LaneHandler): Promise<void> {
    const served: ServedLane = { stream, lastMessageAt: this.#o.clock.now() };
    this.#served.add(served);
    this.#startSweep();
    const frames = new FrameReader(MAX_FRAME_BYTES);
    try {
      for await (const chunk of stream) {
        const messages = frames.push(chunk);
        if (messages.length === 0) continue;
        served.lastMessageAt = this.#o.clock.now();
        const acks = messages.map((message) => handler(stream.peer, message));
        // Read no further until the sender takes the acknowledgements: a sender that does not read them is held back.
        await stream.write(framesOf(acks));
      }
      await stream.closeWrite();
    } catch (error) {
      const name = toHex(stream.peer).slice(0, 16);
      if (error instanceof DecodeError) {
        this.#o.log(`messaging: ${name}… sent a lane frame that is not a message (${error.message}); lane reset`);
        this.#o.network.penalise(stream.peer, 'a message lane frame that is not a message');
      } else if (!(error instanceof StreamResetError)) {
        this.#o.log(`messaging: the lane from ${name}… failed: ${messageOf(error)}; lane reset`);
      }
      stream.reset(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.#served.delete(served);
    }
  }
}
