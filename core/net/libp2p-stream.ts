/**
 * A libp2p 3 stream as the network port's PeerStream. libp2p 3 streams are event targets:
 * 'message' carries what arrives, `send` returns false when the muxer wants a 'drain', `close`
 * ends the writing side (a yamux FIN) and `abort` resets. Reading is paced here: past the queue's
 * bound the stream is paused, which stops yamux from granting the sender more window, and resumed
 * once half of it is read.
 */
import type { Stream } from '@libp2p/interface';
import { messageOf } from '../errors.ts';
import { ChunkQueue, closedSignal, DEFAULT_HIGH_WATER_BYTES, resetByPeer } from './duplex.ts';
import { StreamResetError } from './errors.ts';
import type { PeerStream } from './network.ts';

// A paused stream grants no more window, but the sender may still use what it was granted: up to
// yamux's largest window (16 MiB). libp2p's read buffer must hold that rather than reset the stream.
const PAUSED_READ_BUFFER_BYTES = 16 * 1024 * 1024 + DEFAULT_HIGH_WATER_BYTES;

export class Libp2pPeerStream implements PeerStream {
  readonly peer: Uint8Array;
  readonly #stream: Stream;
  readonly #queue: ChunkQueue;
  readonly #closed = closedSignal();
  /** The other side's FIN has come. */
  #fin = false;
  /** This side closed its writing (libp2p also closes it when the connection is hung up). */
  #writeClosed = false;

  constructor(stream: Stream, peer: Uint8Array) {
    this.peer = peer;
    this.#stream = stream;
    stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, PAUSED_READ_BUFFER_BYTES);
    this.#queue = new ChunkQueue({
      pause: () => {
        if (stream.readStatus === 'readable') stream.pause();
      },
      resume: () => {
        if (stream.readStatus === 'paused') stream.resume();
      },
    });
    stream.addEventListener('message', (event) => {
      const data = event.data;
      if (data instanceof Uint8Array) this.#queue.push(data);
      else for (const chunk of data) this.#queue.push(chunk);
      // Bytes put back after 'end' (below) come as a message after it: the reading ends with them.
      this.#onEnd();
    });
    stream.addEventListener('remoteCloseWrite', () => {
      this.#fin = true;
    });
    // 'end' comes once what was buffered (also while paused) has been delivered: after a FIN, the
    // reading is over; after a reset, 'close' says so. But 'end' does not mean the buffer is empty:
    // bytes can be put back after it (libp2p's MessageStream.readableEnded). The dialling side's
    // protocol negotiation does so: its reader takes whatever arrived with the listener's answer,
    // the listener's first bytes and FIN too when they came at once ('end' fires then), and puts the
    // bytes past the answer back when it hands the stream over. So the reading ends once 'end' has
    // come and nothing is left in libp2p's buffer.
    stream.addEventListener('end', () => this.#onEnd());
    stream.addEventListener('close', (event) => this.#onClose(event.error, event.local === true));
    // The peer may have closed its writing, or the stream ended, before this side took the stream
    // (the events of that have passed).
    const broken = stream.status === 'reset' || stream.status === 'aborted';
    if (stream.remoteWriteStatus === 'closed' && !broken) this.#fin = true;
    this.#onEnd();
    if (stream.status !== 'open') this.#onClose(broken ? new Error(stream.status) : undefined, stream.status === 'aborted');
  }

  #onEnd(): void {
    const stream = this.#stream;
    if (!this.#fin || !stream.readableEnded || stream.readBufferLength > 0) return;
    if (stream.status !== 'reset' && stream.status !== 'aborted') this.#queue.end();
  }

  // Closed without an error after the FIN both ways is the end; any other close (a reset, a
  // connection that closed or broke) ends the stream unfinished. A connection hung up gracefully
  // closes its streams' writing for them: only this side's own closeWrite counts.
  #onClose(error: Error | undefined, local: boolean): void {
    if (error === undefined && this.#fin && this.#writeClosed) return this.#closed.resolve();
    let reason: StreamResetError;
    if (error instanceof StreamResetError) reason = error;
    else if (error === undefined) reason = new StreamResetError('the connection closed before the stream ended');
    else reason = local ? new StreamResetError(`the stream was reset: ${messageOf(error)}`) : resetByPeer();
    this.#queue.fail(reason);
    this.#closed.reject(reason);
  }

  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.#queue[Symbol.asyncIterator]();
  }

  async write(chunk: Uint8Array): Promise<void> {
    const stream = this.#stream;
    if (stream.writeStatus !== 'writable') throw this.#notWritable();
    try {
      if (!stream.send(chunk)) await stream.onDrain();
    } catch {
      throw this.#notWritable();
    }
  }

  async closeWrite(): Promise<void> {
    this.#writeClosed = true;
    try {
      await this.#stream.close();
    } catch {
      throw this.#notWritable();
    }
  }

  reset(reason: Error = new Error('reset by this side')): void {
    const error = reason instanceof StreamResetError ? reason : new StreamResetError(`the stream was reset: ${reason.message}`);
    this.#queue.abort(error);
    this.#stream.abort(error);
  }

  #notWritable(): StreamResetError {
    const status = this.#stream.status;
    if (status === 'reset') return resetByPeer();
    if (status === 'aborted') return new StreamResetError('the stream was reset');
    return new StreamResetError('the stream is closed for writing');
  }
}
