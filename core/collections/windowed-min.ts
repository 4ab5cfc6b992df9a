/**
 * The least value seen over the last `spanMs`, in bounded memory whatever the rate of values: time
 * is cut into `slots` slots per span and each keeps only its least value, so at most slots + 1 are
 * held and a value counts for at least `spanMs` after it was seen and for less than one slot more.
 *
 * ```ts
 * const least = new WindowedMin(600_000);
 * least.add(12, now);
 * least.add(80, now + 60_000);
 * least.least(now + 120_000); // 12
 * ```
 */
export class WindowedMin {
  readonly spanMs: number;
  readonly #slotMs: number;
  /** [slot number, least value of the slot], oldest first. */
  #held: [number, number][] = [];

  constructor(spanMs: number, slots = 10) {
    if (!(spanMs > 0 && Number.isFinite(spanMs))) throw new RangeError(`the span must be a positive number of ms, got ${spanMs}`);
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`the slots must be a positive integer, got ${slots}`);
    this.spanMs = spanMs;
    this.#slotMs = spanMs / slots;
  }

  /** Takes `value`, seen at `at` (ms); values may come out of order. */
  add(value: number, at: number): void {
    const slot = Math.floor(at / this.#slotMs);
    let i = this.#held.length;
    while (i > 0 && this.#held[i - 1]![0] > slot) i--;
    const held = this.#held[i - 1];
    if (held !== undefined && held[0] === slot) held[1] = Math.min(held[1], value);
    else this.#held.splice(i, 0, [slot, value]);
    // Out of the newest slot's span goes, a late value as well: never more than slots + 1 held.
    this.#expire(this.#held[this.#held.length - 1]![0] * this.#slotMs);
  }

  /** The least value seen within the span before `now`; null when none is. */
  least(now: number): number | null {
    this.#expire(now);
    let least: number | null = null;
    for (const [, value] of this.#held) if (least === null || value < least) least = value;
    return least;
  }

  #expire(now: number): void {
    const oldest = Math.floor((now - this.spanMs) / this.#slotMs);
    while (this.#held.length > 0 && this.#held[0]![0] < oldest) this.#held.shift();
  }
}
