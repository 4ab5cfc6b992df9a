/**
 * The tunnel's sockets port on Node (core/tunnel/sockets.ts): TCP through node:net, each
 * connection a Duplex with TCP's own semantics. Sockets are half-open capable (a FIN ends one
 * direction only), paused while what they delivered is unread (so a slow peer stream slows the
 * TCP sender, not memory), and reset with an RST (`resetAndDestroy`) when the tunnel resets them.
 */
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { ChunkQueue, closedSignal, type Duplex } from '../core/net/duplex.ts';
import { StreamResetError } from '../core/net/errors.ts';
import { formatAddress, type SocketAddress } from '../core/tunnel/address.ts';
import { TunnelError } from '../core/tunnel/errors.ts';
import type { SocketListener, TunnelSockets } from '../core/tunnel/sockets.ts';

const codeOf = (error: Error): string => (error as NodeJS.ErrnoException).code ?? error.message;

/** A connected TCP socket as a Duplex. */
class SocketDuplex implements Duplex {
  readonly #socket: Socket;
  readonly #queue: ChunkQueue;
  readonly #closed = closedSignal();
  #finSent = false;
  #finReceived = false;
  #broken: StreamResetError | null = null;

  constructor(socket: Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    this.#queue = new ChunkQueue({ pause: () => socket.pause(), resume: () => socket.resume() });
    socket.on('data', (chunk: Buffer) => this.#queue.push(chunk));
    socket.on('end', () => {
      this.#finReceived = true;
      this.#queue.end();
    });
    socket.on('error', (error) => this.#break(new StreamResetError(`the connection broke: ${codeOf(error)}`), false));
    socket.on('close', () => {
      if (this.#finSent && this.#finReceived && this.#broken === null) this.#closed.resolve();
      else this.#break(new StreamResetError('the connection closed before both sides ended it'), false);
    });
  }

  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.#queue[Symbol.asyncIterator]();
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.#checkWritable();
    if (this.#socket.write(chunk)) return;
    await this.#until('drain');
    this.#checkWritable();
  }

  async closeWrite(): Promise<void> {
    if (this.#finSent) return;
    this.#checkWritable();
    this.#finSent = true;
    this.#socket.end();
    await this.#until('finish');
  }

  reset(reason: Error = new Error('reset by this side')): void {
    this.#break(reason instanceof StreamResetError ? reason : new StreamResetError(`the connection was reset: ${reason.message}`), true);
  }

  #break(error: StreamResetError, local: boolean): void {
    if (this.#broken !== null) return;
    this.#broken = error;
    if (local) this.#queue.abort(error);
    else this.#queue.fail(error);
    this.#closed.reject(error);
    // An RST, not a FIN: the other end must not take a cut stream for a finished one.
    if (!this.#socket.destroyed) this.#socket.resetAndDestroy();
  }

  #checkWritable(): void {
    if (this.#broken !== null) throw this.#broken;
    if (this.#finSent) throw new StreamResetError('the connection is closed for writing');
  }

  /** Resolves on `event`; rejects when the socket closes first. */
  #until(event: 'drain' | 'finish'): Promise<void> {
    const socket = this.#socket;
    return new Promise((resolve, reject) => {
      const done = (): void => {
        socket.off('close', closed);
        resolve();
      };
      const closed = (): void => {
        socket.off(event, done);
        reject(this.#broken ?? new StreamResetError('the connection closed'));
      };
      socket.once(event, done);
      socket.once('close', closed);
    });
  }
}

/** TCP on this machine for tunnels. */
export const nodeTunnelSockets: TunnelSockets = {
  async listen(address: SocketAddress, accept: (connection: Duplex) => void): Promise<SocketListener> {
    const server = createServer({ allowHalfOpen: true }, (socket) => accept(new SocketDuplex(socket)));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: address.host, port: address.port, exclusive: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      throw new TunnelError('bind-failed', `cannot listen on ${formatAddress(address)}: ${codeOf(error as Error)}`);
    }
    // Past the bind, a server's errors (too many open files) refuse one connection, not the tunnel.
    server.on('error', () => {});
    const bound = { host: address.host, port: (server.address() as AddressInfo).port };
    return {
      address: bound,
      // The port is released at once; close()'s callback would wait for every connection to end.
      close: async () => void server.close(),
    };
  },

  connect(address: SocketAddress, options: { signal: AbortSignal }): Promise<Duplex> {
    options.signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const socket = connect({ host: address.host, port: address.port, allowHalfOpen: true });
      const settle = (): void => {
        socket.off('error', failed);
        options.signal.removeEventListener('abort', aborted);
      };
      const failed = (error: Error): void => {
        settle();
        reject(new Error(`connect ${codeOf(error)} ${formatAddress(address)}`));
      };
      const aborted = (): void => {
        settle();
        socket.destroy();
        reject(options.signal.reason);
      };
      socket.once('connect', () => {
        settle();
        resolve(new SocketDuplex(socket));
      });
      socket.once('error', failed);
      options.signal.addEventListener('abort', aborted, { once: true });
    });
  },
};
