/**
 * Timing helpers shared by every runtime's benchmark: web-standard only (`performance.now`,
 * promises), so the same file runs on Node, Deno and in Chromium.
 *
 * A measurement warms a contender up, sizes a sample so that it lasts at least `minSampleMs`
 * (timer resolution is 100 µs in a page that is not cross-origin isolated), then takes
 * repeated samples. Contenders of one comparison are sampled in interleaved rounds, so a slow
 * patch of the machine (another process, a frequency change) hits all of them alike and the
 * ratio between them stays honest.
 */

/** The median of `values` (mean of the middle two for an even count). Throws on an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The nearest-rank percentile `p` (0..100) of `values`. Throws on an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError('percentile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/** One implementation taking part in a comparison. */
export interface Contender {
  /** What the table shows, e.g. "core sha256 (wasm)". */
  readonly name: string;
  /** `baseline` for the runtime's own implementation the core is compared with. */
  readonly role: 'core' | 'baseline';
  /** One operation; may return a promise, which is awaited before the next one starts. */
  readonly op: () => unknown;
  /**
   * Untimed work before each sample (and before each warm-up call), e.g. picking a fresh set
   * of keys. A contender with `setup` is timed one call per sample.
   */
  readonly setup?: () => unknown;
  /** Samples for this contender, when it must differ from the comparison's (a slow backend). */
  readonly samples?: number;
  /** A short remark printed next to the figure. */
  readonly note?: string;
}

/** What one contender measured. */
export interface Measurement {
  readonly name: string;
  readonly role: 'core' | 'baseline';
  /** Median time of one operation, in nanoseconds. */
  readonly medianNs: number;
  readonly opsPerSec: number;
  /** Per-operation time of every sample, in nanoseconds, in the order taken. */
  readonly samplesNs: number[];
  /** Operations per sample. */
  readonly iterations: number;
  readonly note?: string;
}

export interface MeasureOptions {
  /** Samples per contender (default 9). */
  readonly samples: number;
  /** A sample's least duration (default 20 ms). */
  readonly minSampleMs: number;
  /** Warm-up time per contender before sizing (default 100 ms); at least one call is made. */
  readonly warmupMs: number;
}

export const DEFAULT_MEASURE: MeasureOptions = { samples: 9, minSampleMs: 20, warmupMs: 100 };

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** Runs `op` `n` times and returns the elapsed milliseconds; awaits each call only if it is async. */
async function timeLoop(op: () => unknown, n: number, isAsync: boolean): Promise<number> {
  const start = performance.now();
  if (isAsync) {
    for (let i = 0; i < n; i++) await op();
  } else {
    for (let i = 0; i < n; i++) op();
  }
  return performance.now() - start;
}

interface Prepared {
  readonly contender: Contender;
  readonly isAsync: boolean;
  readonly iterations: number;
  readonly samplesWanted: number;
  readonly samplesNs: number[];
}

async function prepare(contender: Contender, options: MeasureOptions): Promise<Prepared> {
  await contender.setup?.();
  const first = contender.op();
  const isAsync = isThenable(first);
  if (isAsync) await first;
  const samplesWanted = contender.samples ?? options.samples;
  // Warm up: let the JIT settle and the runtime reach its steady state (a thread pool started,
  // a WebAssembly module tiered up).
  const warmEnd = performance.now() + options.warmupMs;
  let iterations = 1;
  if (contender.setup) {
    while (performance.now() < warmEnd) {
      await contender.setup();
      await timeLoop(contender.op, 1, isAsync);
    }
  } else {
    while (performance.now() < warmEnd) await timeLoop(contender.op, iterations, isAsync);
    // Size a sample: double the count until one loop lasts minSampleMs, then scale to it.
    for (;;) {
      const ms = await timeLoop(contender.op, iterations, isAsync);
      if (ms >= options.minSampleMs) break;
      const scale = ms > 0 ? Math.min(16, (options.minSampleMs * 1.2) / ms) : 16;
      iterations = Math.max(iterations + 1, Math.ceil(iterations * scale));
    }
  }
  return { contender, isAsync, iterations, samplesWanted, samplesNs: [] };
}

/**
 * Measures the contenders side by side: each is warmed up and sized, then samples are taken in
 * rounds, one sample of each contender per round, the starting contender rotating each round.
 */
export async function compare(contenders: readonly Contender[], options: MeasureOptions = DEFAULT_MEASURE): Promise<Measurement[]> {
  const prepared: Prepared[] = [];
  for (const contender of contenders) prepared.push(await prepare(contender, options));
  for (let round = 0; prepared.some((p) => p.samplesNs.length < p.samplesWanted); round++) {
    for (let k = 0; k < prepared.length; k++) {
      const p = prepared[(round + k) % prepared.length]!;
      if (p.samplesNs.length >= p.samplesWanted) continue;
      await p.contender.setup?.();
      const ms = await timeLoop(p.contender.op, p.iterations, p.isAsync);
      p.samplesNs.push((ms * 1e6) / p.iterations);
    }
  }
  return prepared.map((p) => {
    const medianNs = median(p.samplesNs);
    const measurement: Measurement = {
      name: p.contender.name,
      role: p.contender.role,
      medianNs,
      opsPerSec: 1e9 / medianNs,
      samplesNs: p.samplesNs,
      iterations: p.iterations,
    };
    return p.contender.note === undefined ? measurement : { ...measurement, note: p.contender.note };
  });
}

/** A duration in nanoseconds as a short human figure: "812 ns", "3.41 µs", "27.9 ms". */
export function formatDuration(ns: number): string {
  const three = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  if (ns < 1e3) return `${three(ns)} ns`;
  if (ns < 1e6) return `${three(ns / 1e3)} µs`;
  if (ns < 1e9) return `${three(ns / 1e6)} ms`;
  return `${three(ns / 1e9)} s`;
}

/** A rate as a short human figure: "12.3 k", "4.56 M". */
export function formatRate(perSecond: number): string {
  if (perSecond >= 1e9) return `${(perSecond / 1e9).toPrecision(3)} G`;
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toPrecision(3)} M`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toPrecision(3)} k`;
  return perSecond.toPrecision(3);
}
