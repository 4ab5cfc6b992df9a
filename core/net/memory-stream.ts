/**
 * A raw peer stream in memory, for the memory network: two ends joined back to back, with the
 * libp2p stream's semantics (a FIN per direction, a reset that ends both, a writer held back while
 * the reader's queue is over its bound). Each chunk is copied as it crosses, as bytes on a wire.
 */
import { ChunkQueue, closedSignal, resetByPeer } from './duplex.ts';
import { StreamResetError } from './errors.ts';
import type { PeerStream } from './network.ts';

class MemoryEnd implements PeerStream {
  readonly peer: Uint8Array;
  other!: MemoryEnd;
  /** What the other end wrote and this one has not read. */
  readonly queue: ChunkQueue;
  readonly #closed = closedSignal();
  /** Set while the other end's queue is full: this end's writes wait for it. */
  #room: { promise: Promise<void>; resolve: () => void } | null = null;
  #writeClosed = false;
  #finReceived = false;
  #reset: StreamResetError | null = null;
  #done = false;

  constructor(peer: Uint8Array) {
    this.peer = peer;
    this.queue = new ChunkQueue({ pause: () => this.other.#hold(), resume: () => this.other.#release() });
  }

  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.queue[Symbol.asyncIterator]();
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.#checkWritable();
    this.other.queue.push(chunk.slice());
    await this.#room?.promise;
    this.#checkWritable();
  }

  async closeWrite(): Promise<void> {
    if (this.#writeClosed) return;
    this.#checkWritable();
    this.#writeClosed = true;
    this.other.#finReceived = true;
    this.other.queue.end();
    for (const end of [this, this.other]) end.#settle();
  }

  reset(reason: Error = new Error('reset by this side')): void {
    if (this.#reset !== null || this.#done) return;
    this.#end(reason instanceof StreamResetError ? reason : new StreamResetError(`the stream was reset: ${reason.message}`), true);
    this.other.#end(resetByPeer(), false);
  }

  /** Ends the stream at once from outside (a cut link), both ends alike. */
  cut(reason: string): void {
    if (this.#reset !== null || this.#done) return;
    this.#end(new StreamResetError(reason), true);
    this.other.#end(new StreamResetError(reason), false);
  }

  #end(error: StreamResetError, local: boolean): void {
    if (this.#reset !== null || this.#done) return;
    this.#reset = error;
    if (local) this.queue.abort(error);
    else this.queue.fail(error);
    this.#release();
    this.#closed.reject(error);
  }

  #settle(): void {
    if (this.#done || this.#reset !== null || !this.#writeClosed || !this.#finReceived) return;
    this.#done = true;
    this.#closed.resolve();
  }

  #checkWritable(): void {
    if (this.#reset !== null) throw this.#reset;
    if (this.#writeClosed) throw new StreamResetError('the stream is closed for writing');
  }

  #hold(): void {
    if (this.#room !== null) return;
    let resolve!: () => void;
    const promise = new Promise<void>((res) => (resolve = res));
    this.#room = { promise, resolve };
  }

  #release(): void {
    const room = this.#room;
    this.#room = null;
    room?.resolve();
  }
}

/** A stream between two nodes: the end `opener` holds and the end `server` is handed. */
export interface MemoryStreamPair {
  readonly opener: PeerStream;
  readonly server: PeerStream;
  /** Whether both ends are over (closed or reset). */
  readonly over: Promise<void>;
  /** Resets both ends with `reason` (the connection under them broke). */
  cut(reason: string): void;
}

export function memoryStreamPair(openerNode: Uint8Array, serverNode: Uint8Array): MemoryStreamPair {
  const opener = new MemoryEnd(serverNode);
  const server = new MemoryEnd(openerNode);
  opener.other = server;
  server.other = opener;
  const over = Promise.allSettled([opener.closed, server.closed]).then(() => {});
  return { opener, server, over, cut: (reason) => opener.cut(reason) };
}
