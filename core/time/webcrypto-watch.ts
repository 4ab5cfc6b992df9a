/**
 * WebCrypto finishes its work on other threads, where no scheduler can see it. `watchWebCrypto`
 * wraps the methods of `SubtleCrypto` once, so each call's promise is handed to the `track` of every
 * tracker registered (a Scheduler), and settles wait for digests and signatures in flight.
 */
interface Tracker {
  track(work: Promise<unknown>): unknown;
}

const METHODS = [
  'digest',
  'sign',
  'verify',
  'importKey',
  'exportKey',
  'generateKey',
  'deriveBits',
  'deriveKey',
  'encrypt',
  'decrypt',
  'wrapKey',
  'unwrapKey',
] as const;

// Weak, so the schedulers of finished tests are not kept alive by the wrapper.
const trackers = new Set<WeakRef<Tracker>>();
let wrapped = false;

function report(work: Promise<unknown>): void {
  for (const ref of trackers) {
    const tracker = ref.deref();
    if (tracker === undefined) trackers.delete(ref);
    else tracker.track(work);
  }
}

function wrap(): void {
  const proto = globalThis.SubtleCrypto?.prototype as unknown as Record<string, (...args: unknown[]) => Promise<unknown>> | undefined;
  if (proto === undefined) return;
  for (const name of METHODS) {
    const original = proto[name];
    if (typeof original !== 'function') continue;
    proto[name] = function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const work = original.apply(this, args);
      report(work);
      return work;
    };
  }
  wrapped = true;
}

/** From now on, every WebCrypto call is tracked by `tracker` too, for as long as it is alive. */
export function watchWebCrypto(tracker: Tracker): void {
  if (!wrapped) wrap();
  trackers.add(new WeakRef(tracker));
}
