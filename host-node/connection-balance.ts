/**
 * Even connections over the threads of one server. Each serving thread has its own socket of the
 * port (SO_REUSEPORT), and Linux picks one for every new connection by a hash of its addresses: 32
 * connections often fall 20 and 12, or worse, and the thread with more answers each of them at
 * twice the latency. So a thread that holds more than its share (one more than the average) asks
 * the client of a connection it just answered to close it (`Connection: close`); the client
 * reconnects, and the kernel picks again. Counts are one Int32 a thread in shared memory.
 */

/** What serveFetch (http-server.ts) tells the balance, and asks it. */
export interface ConnectionBalance {
  /** A connection was accepted. */
  opened(): void;
  /** A connection closed that was not asked to leave. */
  closed(): void;
  /**
   * Whether the connection just answered should close, so its client reconnects elsewhere. A yes
   * counts it gone at once, so the answers in flight do not all say yes together.
   */
  shouldLeave(): boolean;
}

/**
 * Shared memory for the balance of up to `threads` threads: how many serve now (only those count:
 * one thread alone never sends a client away), how many clients were sent away and have not
 * reconnected yet (so that a thread does not send away more than its surplus before they land),
 * then one count of connections a thread.
 */
export function connectionCounts(threads: number): SharedArrayBuffer {
  const counts = new SharedArrayBuffer(4 * (threads + FIRST));
  setServingThreads(counts, 1);
  return counts;
}

const SERVING = 0;
const IN_TRANSIT = 1;
const FIRST = 2;

/** Says how many threads serve now (the main thread, once the others are listening). */
export function setServingThreads(counts: SharedArrayBuffer, serving: number): void {
  Atomics.store(new Int32Array(counts), SERVING, serving);
}

/** Forgets the connections of thread `index`, which stopped. */
export function forgetThread(counts: SharedArrayBuffer, index: number): void {
  Atomics.store(new Int32Array(counts), FIRST + index, 0);
}

/** The balance of thread `index` (0 the main thread) over `counts` (from connectionCounts, shared by every thread). */
export function threadBalance(counts: SharedArrayBuffer, index: number): ConnectionBalance {
  const view = new Int32Array(counts);
  const slot = FIRST + index;
  if (!Number.isInteger(index) || index < 0 || slot >= view.length) throw new RangeError(`no thread ${index} among ${view.length - FIRST}`);
  return {
    opened(): void {
      Atomics.add(view, slot, 1);
      // Most likely a client sent away, back: one fewer in transit, never below 0.
      for (let seen = Atomics.load(view, IN_TRANSIT); seen > 0; ) {
        const was = Atomics.compareExchange(view, IN_TRANSIT, seen, seen - 1);
        if (was === seen) break;
        seen = was;
      }
    },
    closed: () => void Atomics.sub(view, slot, 1),
    shouldLeave(): boolean {
      const serving = Atomics.load(view, SERVING);
      if (serving < 2) return false;
      let total = Atomics.load(view, IN_TRANSIT);
      for (let i = FIRST; i < view.length; i++) total += Atomics.load(view, i);
      // More than one over the average: mine > total / serving + 1.
      if (Atomics.load(view, slot) * serving <= total + serving) return false;
      Atomics.sub(view, slot, 1);
      Atomics.add(view, IN_TRANSIT, 1);
      return true;
    },
  };
}
