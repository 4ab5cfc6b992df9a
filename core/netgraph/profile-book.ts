/**
 * The profiles a node holds (docs/fabric.md "The book"): the newest verified profile per node,
 * within a time window, at most `maxNodes` of them. Time (unix seconds) is passed in, so tests
 * control it.
 */
import { NodeTable } from '../collections/node-table.ts';
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
  readonly #profiles: NodeTable<SignedProfile>;

  constructor(options: { maxNodes?: number } = {}) {
    this.#profiles = new NodeTable(options.maxNodes ?? PROFILE_BOOK_MAX_NODES, (profile, nowS) => profile.body.measured_at + PROFILE_TTL_S > nowS);
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
    this.#profiles.set(profile.nodeId, profile);
  }

  /** The live profile of `nodeId` (hex), or undefined. */
  get(nodeId: string, nowS: number): SignedProfile | undefined {
    return this.#profiles.get(nodeId, nowS);
  }

  /** The live profiles, sorted by node id; expired ones are dropped for good. */
  list(nowS: number): SignedProfile[] {
    return this.#profiles.live(nowS);
  }

  /** Profiles held, expired ones included until the next `list`. */
  get size(): number {
    return this.#profiles.size;
  }
}
