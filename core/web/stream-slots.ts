/**
 * Bounds on how many long-lived answers (event streams) a service holds open at once, in all and
 * per client: each open stream holds a subscription, a queue and a socket, so without a bound a
 * client that opens thousands makes the server hold thousands. A stream takes a slot when it opens
 * and gives it back when it ends, however it ends; past either bound the service refuses the
 * stream (503 with Retry-After) rather than queue it.
 *
 * @example
 * const slots = new StreamSlots({ total: 256, perClient: 32 });
 * const release = slots.take('127.0.0.1');
 * if (release === undefined) throw new ApiProblem('too-many-streams', '…');
 * // … and when the stream ends:
 * release();
 */

export interface StreamCaps {
  /** Streams open at once, all clients together. */
  readonly total: number;
  /** Streams open at once for one client (one remote address). */
  readonly perClient: number;
}

/** Gives a slot back; a second call does nothing. */
export type Release = () => void;

/** Counts the open streams, in all and by client. */
export class StreamSlots {
  readonly caps: StreamCaps;
  readonly #byClient = new Map<string, number>();
  #open = 0;

  constructor(caps: StreamCaps) {
    for (const [name, value] of Object.entries(caps)) {
      if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive integer, got ${value}`);
    }
    this.caps = { total: caps.total, perClient: caps.perClient };
  }

  /** Streams open now, in all. */
  get open(): number {
    return this.#open;
  }

  /** Streams open now for `client`. */
  openFor(client: string): number {
    return this.#byClient.get(client) ?? 0;
  }

  /** Which bound a new stream for `client` would pass, or undefined when it fits. */
  full(client: string): 'total' | 'per-client' | undefined {
    if (this.#open >= this.caps.total) return 'total';
    if (this.openFor(client) >= this.caps.perClient) return 'per-client';
    return undefined;
  }

  /** A slot for `client`, or undefined past either bound. */
  take(client: string): Release | undefined {
    if (this.full(client) !== undefined) return undefined;
    this.#open++;
    this.#byClient.set(client, this.openFor(client) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#open--;
      const left = this.openFor(client) - 1;
      // A client with no stream leaves no entry behind: the map is as large as the open clients.
      if (left === 0) this.#byClient.delete(client);
      else this.#byClient.set(client, left);
    };
  }
}
