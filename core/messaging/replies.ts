/**
 * The requests this node holds open for its apps (node-messaging.md §2 "Request"): each AppRequest
 * that arrives gets a reply token and waits, its RPC stream open, until the app answers with
 * POST /mesh/reply, its time runs out, or the requester goes away.
 *
 * A token is answered at most once. Tokens that were answered or ran out are remembered (a bounded
 * number of them, the newest), so a late or second reply is told which it is instead of "unknown";
 * neither is ever sent.
 */
import { RecentSet } from '../collections/recent-set.ts';
import type { Random } from '../crypto/random.ts';
import { toHex } from '../encoding/hex.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { MessagingError } from './errors.ts';

/** Bytes of randomness in a reply token (written as 32 lowercase hex characters). */
export const REPLY_TOKEN_BYTES = 16;
/** Finished tokens remembered, of each outcome. */
const FINISHED_MEMORY = 8_192;

/** How a held request ended: the app's payload, or none (time ran out, the requester went away, the node stopped). */
export type Outcome = { readonly payload: Uint8Array } | { readonly gone: string };

interface Held {
  readonly timer: Timer;
  readonly settle: (outcome: Outcome) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

export class HeldRequests {
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #held = new Map<string, Held>();
  readonly #replied = new RecentSet<string>(FINISHED_MEMORY);
  readonly #lapsed = new RecentSet<string>(FINISHED_MEMORY);

  constructor(clock: Clock, random: Random) {
    this.#clock = clock;
    this.#random = random;
  }

  /** Requests waiting for their replies. */
  get size(): number {
    return this.#held.size;
  }

  /**
   * Holds a request for at most `timeoutMs`, or until `signal` aborts: returns its token (given to
   * the app before anything can answer it, through `announce`) and the outcome to come.
   */
  hold(timeoutMs: number, signal: AbortSignal, announce: (token: string) => void): Promise<Outcome> {
    const token = toHex(this.#random.bytes(REPLY_TOKEN_BYTES));
    const outcome = new Promise<Outcome>((settle) => {
      const onAbort = (): void =>
        this.#lapse(token, `the requester went away or the node stopped (${String((signal.reason as Error)?.message ?? signal.reason)})`);
      const timer = this.#clock.setTimeout(() => this.#lapse(token, `no reply within ${timeoutMs} ms`), timeoutMs);
      this.#held.set(token, { timer, settle, signal, onAbort });
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) onAbort();
    });
    announce(token);
    return outcome;
  }

  /**
   * Answers the request of `token` with `payload`. Throws MessagingError 'already-replied' (409),
   * 'reply-too-late' (410) or 'unknown-reply-token' (404); nothing is sent then.
   */
  reply(token: string, payload: Uint8Array): void {
    const held = this.#finish(token);
    if (held !== undefined) {
      this.#replied.add(token);
      held.settle({ payload });
      return;
    }
    if (this.#replied.has(token))
      throw new MessagingError('already-replied', `the request of reply token ${token} was answered already; this reply was not sent`);
    if (this.#lapsed.has(token)) {
      throw new MessagingError('reply-too-late', `the request of reply token ${token} ran out of time or its requester went away; this reply was not sent`);
    }
    throw new MessagingError('unknown-reply-token', `no request of reply token ${token} reached this node (or it was forgotten)`);
  }

  /** Ends every held request (the node stops): none is answered. */
  close(): void {
    for (const token of [...this.#held.keys()]) this.#lapse(token, 'the node stopped');
  }

  #lapse(token: string, why: string): void {
    const held = this.#finish(token);
    if (held === undefined) return;
    this.#lapsed.add(token);
    held.settle({ gone: why });
  }

  #finish(token: string): Held | undefined {
    const held = this.#held.get(token);
    if (held === undefined) return undefined;
    this.#held.delete(token);
    held.timer.cancel();
    held.signal.removeEventListener('abort', held.onAbort);
    return held;
  }
}
