/**
 * Network coordinates: Vivaldi (Dabek, Cox, Kaashoek, Morris, SIGCOMM 2004) with height vectors,
 * run the way HashiCorp Serf's `coordinate` package runs it, with its defaults. Each node holds a
 * coordinate; the distance between two coordinates predicts the round-trip time between their
 * nodes, so a node can rank peers it has never measured.
 *
 * A node measures the RTT to a peer and hears the peer's coordinate; `observe` then
 *   1. passes the RTT through a moving median of the last 3 samples of that peer (Ledlie et al.,
 *      "Network Coordinates in the Wild", NSDI 2007), so one delayed reply is never seen;
 *   2. moves the coordinate along the line to the peer's by cc × w × (rtt − predicted), where
 *      w = own error ÷ (own error + peer's error) trusts a confident peer more, and the height
 *      (the access link's share of every RTT) by the same force scaled to the heights, never
 *      below 10 µs; the error estimate moves toward |rtt − predicted| ÷ rtt by ce × w, capped at 1.5;
 *   3. sets the adjustment term to half the mean of the last 20 (rtt − raw distance) (Lee et al.,
 *      IEEE/ACM ToN 2010): a per-node offset for what no Euclidean embedding captures;
 *   4. pulls the coordinate toward the origin by (distance to origin ÷ 150)², so the whole system
 *      does not drift away as nodes come and go;
 *   5. starts over from the origin should any component have become NaN or infinite.
 *
 * Coordinates are in seconds, as Serf's (and Consul's) are; RTTs come in and go out in
 * milliseconds, as the rest of the mesh speaks them (`rttMs`). Everything here is pure and
 * deterministic given the injected Random, which is drawn only when two coordinates coincide
 * (every node starts at the origin) to pick a direction.
 *
 * @example
 * const client = new VivaldiClient({ random: systemRandom });
 * client.observe(peerId, peerCoordinate, 42.5); // measured 42.5 ms to that peer
 * estimateRttMs(client.coordinate, otherCoordinate); // predicted RTT to a node never measured
 */
import type { Random } from '../crypto/random.ts';
import { array, decode, encode, f64, struct } from '../encoding/codec.ts';
import { CoordinateError } from './errors.ts';

/** Vivaldi's tuning, named after Serf's Config fields. */
export interface VivaldiConfig {
  /** Euclidean dimensions; beyond about 7 more stop helping (Ledlie et al.). Serf: 8. */
  readonly dimensionality: number;
  /** A new node's error, and the most an error grows to. Serf: 1.5. */
  readonly errorMax: number;
  /** ce: the most one observation moves the error estimate. Serf: 0.25. */
  readonly ce: number;
  /** cc: the most one observation moves the coordinate. Serf: 0.25. */
  readonly cc: number;
  /** Observations the adjustment term averages; 0 turns it off. Serf: 20. */
  readonly adjustmentWindowSize: number;
  /** The least height, in seconds: heights stay positive. Serf: 10 µs. */
  readonly heightMin: number;
  /** RTT samples per peer whose median is used. Serf: 3. */
  readonly latencyFilterSize: number;
  /** rho: the larger, the weaker gravity's pull toward the origin. Serf: 150. */
  readonly gravityRho: number;
}

/** Serf's DefaultConfig. */
export const SERF_CONFIG: VivaldiConfig = Object.freeze({
  dimensionality: 8,
  errorMax: 1.5,
  ce: 0.25,
  cc: 0.25,
  adjustmentWindowSize: 20,
  heightMin: 10e-6,
  latencyFilterSize: 3,
  gravityRho: 150,
});

/** Most dimensions a coordinate may have (the codec's bound). */
export const MAX_DIMENSIONS = 64;
/** The longest RTT an observation may carry: 10 s, as Serf. */
export const MAX_RTT_MS = 10_000;

/** Below this, two positions coincide and a distance counts as zero (Serf's threshold, seconds). */
const ZERO_THRESHOLD = 1e-6;

/** A node's network coordinate. Values are immutable: the client makes a new one at each update. */
export interface Coordinate {
  /** The Euclidean part, seconds. */
  readonly vec: readonly number[];
  /** The height, seconds: a delay added to every RTT of the node, its access link. At least 0. */
  readonly height: number;
  /** How unsure the node is of its coordinate (dimensionless, 0 = certain, at most errorMax). */
  readonly error: number;
  /** A per-node offset added to predicted distances, seconds; may be negative. */
  readonly adjustment: number;
}

function isInteger(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/**
 * A full configuration: Serf's defaults with `overrides` applied, each value checked
 * (CoordinateError 'bad-config').
 */
export function vivaldiConfig(overrides: Partial<VivaldiConfig> = {}): VivaldiConfig {
  const config = { ...SERF_CONFIG, ...overrides };
  const problems: string[] = [];
  const positive = (v: number): boolean => Number.isFinite(v) && v > 0;
  if (!isInteger(config.dimensionality, 1, MAX_DIMENSIONS)) problems.push(`dimensionality ${config.dimensionality} is not an integer in 1..${MAX_DIMENSIONS}`);
  if (!positive(config.errorMax)) problems.push(`errorMax ${config.errorMax} is not above 0`);
  if (!(positive(config.ce) && config.ce <= 1)) problems.push(`ce ${config.ce} is not in (0, 1]`);
  if (!(positive(config.cc) && config.cc <= 1)) problems.push(`cc ${config.cc} is not in (0, 1]`);
  if (!isInteger(config.adjustmentWindowSize, 0, 10_000)) problems.push(`adjustmentWindowSize ${config.adjustmentWindowSize} is not an integer in 0..10000`);
  if (!(Number.isFinite(config.heightMin) && config.heightMin >= 0)) problems.push(`heightMin ${config.heightMin} is not a finite number ≥ 0`);
  if (!isInteger(config.latencyFilterSize, 1, 100)) problems.push(`latencyFilterSize ${config.latencyFilterSize} is not an integer in 1..100`);
  if (!positive(config.gravityRho)) problems.push(`gravityRho ${config.gravityRho} is not above 0`);
  if (problems.length > 0) throw new CoordinateError('bad-config', `Vivaldi configuration: ${problems.join('; ')}`);
  return Object.freeze(config);
}

function freezeCoordinate(vec: readonly number[], height: number, error: number, adjustment: number): Coordinate {
  return Object.freeze({ vec: Object.freeze(vec), height, error, adjustment });
}

/** Where a node starts: the origin, the least height, the largest error. */
export function originCoordinate(config: VivaldiConfig = SERF_CONFIG): Coordinate {
  return freezeCoordinate(new Array<number>(config.dimensionality).fill(0), config.heightMin, config.errorMax, 0);
}

function finiteField(record: Record<string, unknown>, field: string, what: string): number {
  const value = record[field];
  if (typeof value !== 'number') throw new CoordinateError('malformed', `${what}.${field} is not a number`);
  if (!Number.isFinite(value)) throw new CoordinateError('not-finite', `${what}.${field} is ${value}, not a finite number`);
  return value;
}

/**
 * `value` as a coordinate of `dimensionality` dimensions (any from 1 to MAX_DIMENSIONS when
 * omitted), copied so that later changes to `value` cannot reach it; throws CoordinateError
 * ('malformed', 'wrong-dimension', 'not-finite', 'out-of-range') for anything else. Every
 * coordinate from elsewhere (a peer, the API) goes through this or `decodeCoordinate` first.
 */
export function checkCoordinate(value: unknown, dimensionality?: number, what = 'coordinate'): Coordinate {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CoordinateError('malformed', `${what} is not an object`);
  const record = value as Record<string, unknown>;
  const vec = record.vec;
  if (!Array.isArray(vec)) throw new CoordinateError('malformed', `${what}.vec is not an array`);
  if (dimensionality === undefined ? vec.length < 1 || vec.length > MAX_DIMENSIONS : vec.length !== dimensionality) {
    const wanted = dimensionality === undefined ? `1 to ${MAX_DIMENSIONS}` : String(dimensionality);
    throw new CoordinateError('wrong-dimension', `${what}.vec has ${vec.length} dimensions, not ${wanted}`);
  }
  // Indexed, not mapped: map would skip the holes of a sparse array.
  const components = vec as unknown as Record<string, unknown>;
  const copy: number[] = [];
  for (let i = 0; i < vec.length; i++) copy.push(finiteField(components, String(i), `${what}.vec`) + 0);
  const height = finiteField(record, 'height', what);
  const error = finiteField(record, 'error', what);
  const adjustment = finiteField(record, 'adjustment', what);
  if (height < 0) throw new CoordinateError('out-of-range', `${what}.height is ${height}, below 0`);
  if (error < 0) throw new CoordinateError('out-of-range', `${what}.error is ${error}, below 0`);
  // `+ 0` turns -0 into 0: the same coordinate, with one encoding.
  return freezeCoordinate(copy, height + 0, error + 0, adjustment + 0);
}

// What distances read of a coordinate: a Coordinate, or the client's working state.
interface Point {
  readonly vec: ArrayLike<number>;
  readonly height: number;
  readonly adjustment: number;
}

function sameDimension(a: Point, b: Point): void {
  if (a.vec.length !== b.vec.length) {
    throw new CoordinateError('wrong-dimension', `coordinates of ${a.vec.length} and ${b.vec.length} dimensions cannot be compared`);
  }
}

function euclidean(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    sum += d * d;
  }
  return Math.sqrt(sum);
}

// Seconds, without the adjustments: what the Vivaldi part alone predicts.
function rawDistance(a: Point, b: Point): number {
  return euclidean(a.vec, b.vec) + a.height + b.height;
}

// Seconds. The adjustments are used unless they would make the distance non-positive.
function distance(a: Point, b: Point): number {
  const raw = rawDistance(a, b);
  const adjusted = raw + a.adjustment + b.adjustment;
  return adjusted > 0 ? adjusted : raw;
}

/**
 * The RTT between the nodes of two coordinates that `a` and `b` predict, in milliseconds:
 * the Euclidean distance plus both heights plus both adjustments (the adjustments left out if
 * they would make it zero or less). Throws CoordinateError 'wrong-dimension'.
 */
export function estimateRttMs(a: Coordinate, b: Coordinate): number {
  sameDimension(a, b);
  return distance(a, b) * 1000;
}

/** A number in [0, 1) from four random bytes. */
function uniform(bytes: Uint8Array, at: number): number {
  return (((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0) / 2 ** 32;
}

/**
 * Writes into `unit` the unit vector from `to` toward `from` (the way `from` moves when pushed away
 * from `to`) and returns their distance; where they coincide, a random direction and 0.
 */
function unitVectorAt(unit: Float64Array, from: ArrayLike<number>, to: ArrayLike<number>, random: Random): number {
  const magnitude = euclidean(from, to);
  if (magnitude > ZERO_THRESHOLD) {
    for (let i = 0; i < unit.length; i++) unit[i] = (from[i]! - to[i]!) / magnitude;
    return magnitude;
  }
  const bytes = random.bytes(4 * unit.length);
  for (let i = 0; i < unit.length; i++) unit[i] = uniform(bytes, 4 * i) - 0.5;
  const length = euclidean(unit, new Float64Array(unit.length));
  if (length > ZERO_THRESHOLD) for (let i = 0; i < unit.length; i++) unit[i]! /= length;
  else {
    // Every draw at the centre: about never, but a direction is still needed.
    unit.fill(0);
    unit[0] = 1;
  }
  return 0;
}

/** A client's coordinate while it updates it: changed in place, frozen into a Coordinate when read. */
interface Working {
  readonly vec: Float64Array;
  height: number;
  error: number;
  adjustment: number;
}

function isValid(c: Working): boolean {
  for (const x of c.vec) if (!Number.isFinite(x)) return false;
  return Number.isFinite(c.height) && Number.isFinite(c.error) && Number.isFinite(c.adjustment);
}

/** Refuses an RTT that is not a finite number in (0, MAX_RTT_MS]. */
export function checkRttMs(rttMs: unknown): number {
  if (typeof rttMs !== 'number' || !Number.isFinite(rttMs) || rttMs <= 0 || rttMs > MAX_RTT_MS) {
    throw new CoordinateError('bad-rtt', `an RTT of ${String(rttMs)} ms is not a number in (0, ${MAX_RTT_MS}] ms`);
  }
  return rttMs;
}

/**
 * A moving median per peer: each new RTT is answered with the median of that peer's last `size`
 * samples, so a lone spike (a delayed reply, a busy peer) never reaches the coordinate.
 */
export class LatencyFilter {
  readonly #size: number;
  readonly #samples = new Map<string, number[]>();

  constructor(size: number) {
    this.#size = size;
  }

  /** Peers with samples. */
  get peers(): number {
    return this.#samples.size;
  }

  /** Adds `rtt` to the peer's samples and returns their median (the upper one of an even count). */
  sample(peer: string, rtt: number): number {
    let samples = this.#samples.get(peer);
    if (samples === undefined) {
      samples = [];
      this.#samples.set(peer, samples);
    }
    samples.push(rtt);
    if (samples.length > this.#size) samples.shift();
    // An insertion sort of a copy: the window is a handful of numbers.
    const sorted = samples.slice();
    for (let i = 1; i < sorted.length; i++) {
      const x = sorted[i]!;
      let j = i - 1;
      for (; j >= 0 && sorted[j]! > x; j--) sorted[j + 1] = sorted[j]!;
      sorted[j + 1] = x;
    }
    return sorted[sorted.length >> 1]!;
  }

  forget(peer: string): void {
    this.#samples.delete(peer);
  }
}

export interface VivaldiClientInit {
  /** Drawn only to pick a direction where two coordinates coincide. */
  readonly random: Random;
  /** Overrides of Serf's defaults. */
  readonly config?: Partial<VivaldiConfig>;
}

/**
 * One node's coordinate and the state that updates it: the median filter of each peer's RTTs and
 * the adjustment window. Not shared between nodes; a node forgets a peer that leaves.
 */
export class VivaldiClient {
  readonly config: VivaldiConfig;
  readonly #random: Random;
  readonly #origin: Coordinate;
  readonly #mine: Working;
  // The frozen value of #mine, made when first read after a change.
  #snapshot: Coordinate | null = null;
  readonly #unit: Float64Array;
  readonly #adjustmentSamples: Float64Array;
  #adjustmentIndex = 0;
  readonly #filter: LatencyFilter;
  #resets = 0;

  constructor(init: VivaldiClientInit) {
    this.config = vivaldiConfig(init.config);
    this.#random = init.random;
    this.#origin = originCoordinate(this.config);
    this.#mine = { vec: new Float64Array(this.config.dimensionality), height: 0, error: 0, adjustment: 0 };
    this.#unit = new Float64Array(this.config.dimensionality);
    this.#adjustmentSamples = new Float64Array(this.config.adjustmentWindowSize);
    this.#filter = new LatencyFilter(this.config.latencyFilterSize);
    this.#set(this.#origin);
  }

  /** The node's current coordinate (an immutable value). */
  get coordinate(): Coordinate {
    if (this.#snapshot === null) {
      const { vec, height, error, adjustment } = this.#mine;
      const copy = new Array<number>(vec.length);
      for (let i = 0; i < vec.length; i++) copy[i] = vec[i]! + 0;
      this.#snapshot = freezeCoordinate(copy, height + 0, error + 0, adjustment + 0);
    }
    return this.#snapshot;
  }

  /** How many times the coordinate went invalid and started over from the origin. */
  get resets(): number {
    return this.#resets;
  }

  /** Peers whose RTT samples the filter holds. */
  get peers(): number {
    return this.#filter.peers;
  }

  /** Puts the coordinate at a known value (one saved before a restart); checked like a peer's. */
  setCoordinate(coordinate: Coordinate): void {
    this.#set(checkCoordinate(coordinate, this.config.dimensionality));
  }

  /** Drops the RTT samples of a peer that has left. */
  forget(peer: string): void {
    this.#filter.forget(peer);
  }

  /** The predicted RTT from this node to the node at `other`, in milliseconds. */
  estimateRttMs(other: Coordinate): number {
    sameDimension(this.#mine, other);
    return distance(this.#mine, other) * 1000;
  }

  /**
   * Takes one measurement: `rttMs` to `peer`, whose coordinate is `other`. Returns the updated
   * coordinate. A coordinate that is not valid for this node's dimensionality, or an RTT outside
   * (0, 10 s], is refused with a CoordinateError before anything changes.
   */
  observe(peer: string, other: Coordinate, rttMs: number): Coordinate {
    const theirs = checkCoordinate(other, this.config.dimensionality, 'peer coordinate');
    const rtt = this.#filter.sample(peer, checkRttMs(rttMs) / 1000);
    this.#snapshot = null;
    this.#updateVivaldi(theirs, rtt);
    this.#updateAdjustment(theirs, rtt);
    this.#updateGravity();
    if (!isValid(this.#mine)) {
      this.#resets++;
      this.#set(this.#origin);
      this.#adjustmentSamples.fill(0);
    }
    return this.coordinate;
  }

  #set(c: Coordinate): void {
    this.#mine.vec.set(c.vec);
    this.#mine.height = c.height;
    this.#mine.error = c.error;
    this.#mine.adjustment = c.adjustment;
    this.#snapshot = c;
  }

  /**
   * Pushes the coordinate `force` seconds away from `other` (toward it when negative): its vec along
   * the line between them, its height by the same force shared out over both heights, never below
   * heightMin.
   */
  #applyForce(force: number, other: Coordinate): void {
    const mine = this.#mine;
    const magnitude = unitVectorAt(this.#unit, mine.vec, other.vec, this.#random);
    for (let i = 0; i < mine.vec.length; i++) mine.vec[i]! += this.#unit[i]! * force;
    if (magnitude > ZERO_THRESHOLD) {
      mine.height = Math.max(((mine.height + other.height) * force) / magnitude + mine.height, this.config.heightMin);
    }
  }

  #updateVivaldi(other: Coordinate, rtt: number): void {
    const { ce, cc, errorMax } = this.config;
    const mine = this.#mine;
    const predicted = distance(mine, other);
    const wrongness = Math.abs(predicted - rtt) / Math.max(rtt, ZERO_THRESHOLD);
    const weight = mine.error / Math.max(mine.error + other.error, ZERO_THRESHOLD);
    mine.error = Math.min(ce * weight * wrongness + mine.error * (1 - ce * weight), errorMax);
    this.#applyForce(cc * weight * (rtt - predicted), other);
  }

  #updateAdjustment(other: Coordinate, rtt: number): void {
    const size = this.config.adjustmentWindowSize;
    if (size === 0) return;
    // The adjustments themselves stay out of what they are computed from.
    this.#adjustmentSamples[this.#adjustmentIndex] = rtt - rawDistance(this.#mine, other);
    this.#adjustmentIndex = (this.#adjustmentIndex + 1) % size;
    let sum = 0;
    for (const s of this.#adjustmentSamples) sum += s;
    this.#mine.adjustment = sum / (2 * size);
  }

  #updateGravity(): void {
    const pull = distance(this.#origin, this.#mine) / this.config.gravityRho;
    this.#applyForce(-(pull * pull), this.#origin);
  }
}

// ---------------------------------------------------------------------------------------------
// Wire form

/**
 * The canonical encoding of a coordinate, for gossip and signatures: vec (u32 count, then each
 * component an f64), height, error, adjustment (f64 each, big-endian IEEE 754; NaN, infinities
 * and -0 have no encoding). 92 bytes at 8 dimensions.
 */
export const coordinateCodec = struct({ vec: array(f64, MAX_DIMENSIONS), height: f64, error: f64, adjustment: f64 }, 'coordinate');

/** The coordinate's canonical bytes; refuses what `checkCoordinate` refuses. */
export function encodeCoordinate(coordinate: Coordinate): Uint8Array {
  const c = checkCoordinate(coordinate);
  return encode(coordinateCodec, { vec: [...c.vec], height: c.height, error: c.error, adjustment: c.adjustment });
}

/**
 * The coordinate in `bytes`, which must be its canonical encoding (else InvalidEncodingError) and
 * a valid coordinate of `dimensionality` dimensions (else CoordinateError).
 */
export function decodeCoordinate(bytes: Uint8Array, dimensionality: number = SERF_CONFIG.dimensionality): Coordinate {
  return checkCoordinate(decode(coordinateCodec, bytes), dimensionality);
}
