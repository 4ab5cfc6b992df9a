/**
 * The profiles a node holds (docs/fabric.md "The book"): the newest verified profile per node,
 * within a time window, at most `maxNodes` of them. Time (unix seconds) is passed in, so tests
 * control it.
 */
import { ProfileError } from './errors.ts';
import type { SignedProfile } from './profile.ts';

/** A profile is held for a day after it was measured: measure again (`mesh profile`) at least daily. */
export const PROFILE_TTL_S = 24 * 60 * 60;
/** How far measured_at may lie ahead of this node's clock: clocks of honest machines drift. */
export const PROFILE_MAX_SKEW_S = 5 * 60;
/** Nodes the book holds; past it, the least recently updated is dropped first. */
export const PROFILE_BOOK_MAX_NODES = 10_000;

/** Throws ProfileError 'stale' or 'future' when `measuredAt` is outside the window around `nowS`. */
export function checkFreshness(measuredAt: number, nowS: number): void {
  if (measuredAt > nowS + PROFILE_MAX_SKEW_S) {
    throw new ProfileError('future', `measured_at ${measuredAt} is ${measuredAt - nowS} s ahead of this node's clock (at most ${PROFILE_MAX_SKEW_S} s)`);
  }
  if (measuredAt + PROFILE_TTL_S <= nowS) {
    throw new ProfileError('stale', `measured_at ${measuredAt} is ${nowS - measuredAt} s old (a profile lives ${PROFILE_TTL_S} s)`);
  }
}

export class ProfileBook {
  readonly #maxNodes: number;
  // By node id (hex), least recently updated first.
  readonly #profiles = new Map<string, SignedProfile>();

  constructor(options: { maxNodes?: number } = {}) {
    const max = options.maxNodes ?? PROFILE_BOOK_MAX_NODES;
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`maxNodes must be a positive integer, got ${max}`);
    this.#maxNodes = max;
  }

  /**
   * Keeps a verified profile if it is fresh and newer than the one held for its node. Throws
   * ProfileError 'stale', 'future' or 'not-newer', leaving the book as it was.
   */
  offer(profile: SignedProfile, nowS: number): void {
    checkFreshness(profile.body.measured_at, nowS);
    const held = this.get(profile.nodeId, nowS);
    if (held !== undefined && profile.body.measured_at <= held.body.measured_at) {
      throw new ProfileError('not-newer', `a profile of ${profile.nodeId.slice(0, 16)}… measured at ${held.body.measured_at} is held already`);
    }
    this.#profiles.delete(profile.nodeId);
    this.#profiles.set(profile.nodeId, profile);
    for (const id of this.#profiles.keys()) {
      if (this.#profiles.size <= this.#maxNodes) break;
      this.#profiles.delete(id);
    }
  }

  /** The live profile of `nodeId` (hex), or undefined. */
  get(nodeId: string, nowS: number): SignedProfile | undefined {
    const profile = this.#profiles.get(nodeId);
    if (profile === undefined) return undefined;
    if (profile.body.measured_at + PROFILE_TTL_S > nowS) return profile;
    this.#profiles.delete(nodeId);
    return undefined;
  }

  /** The live profiles, sorted by node id; expired ones are dropped for good. */
  list(nowS: number): SignedProfile[] {
    const out: SignedProfile[] = [];
    for (const [id, profile] of this.#profiles) {
      if (profile.body.measured_at + PROFILE_TTL_S <= nowS) this.#profiles.delete(id);
      else out.push(profile);
    }
    return out.sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  }

  /** Profiles held, expired ones included until the next `list`. */
  get size(): number {
    return this.#profiles.size;
  }
}
