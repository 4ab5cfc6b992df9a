/**
 * The node's side of node profiles (docs/fabric.md): it signs and gossips the profile an app
 * measured for it (POST /profiles), keeps the newest verified profile of every node heard on
 * `mesh/profiles/1` in a bounded book, and gossips its own again every PROFILE_REGOSSIP_MS (paced
 * past PACE_NODES profiles known, core/net/broadcast-pace.ts, up to half a profile's life) so that
 * nodes that joined since learn it. It measures nothing itself.
 */
import type { SigningKey } from '../crypto/ed25519.ts';
import { toHex } from '../encoding/hex.ts';
import { everyPaced } from '../net/broadcast-pace.ts';
import type { GossipMessage, Network, Verdict } from '../net/network.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { ProfileError } from './errors.ts';
import { openProfile, PROFILES_TOPIC, type ProfileMeasurement, type SignedProfile, signProfile } from './profile.ts';
import { PROFILE_TTL_S, ProfileBook } from './profile-book.ts';

/** How often a node gossips its own profile again: hourly, a small cost for late joiners to learn it. */
export const PROFILE_REGOSSIP_MS = 60 * 60_000;

export interface NodeProfilesOptions {
  readonly network: Network;
  readonly key: SigningKey;
  /** The chain's network name, signed into every profile. */
  readonly networkName: string;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly regossipMs?: number;
  readonly maxNodes?: number;
}

export class NodeProfiles {
  readonly #options: NodeProfilesOptions;
  readonly #book: ProfileBook;
  readonly #self: string;
  #own: SignedProfile | null = null;
  #timer: Timer | null = null;

  constructor(options: NodeProfilesOptions) {
    this.#options = options;
    this.#book = new ProfileBook(options.maxNodes === undefined ? {} : { maxNodes: options.maxNodes });
    this.#self = toHex(options.key.publicKey);
  }

  start(): void {
    this.#options.network.handle(PROFILES_TOPIC, (message) => this.#onProfile(message));
    const baseMs = this.#options.regossipMs ?? PROFILE_REGOSSIP_MS;
    // A profile is gossiped again within half its life, whatever the pace, or late joiners would never hear it.
    const halfLifeMs = Math.max(baseMs, PROFILE_TTL_S * 500);
    this.#timer = everyPaced(
      this.#options.clock,
      baseMs,
      () => this.#book.size + 1,
      () => void this.#regossip(),
      halfLifeMs,
    );
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = null;
  }

  #nowS(): number {
    return Math.floor(this.#options.clock.now() / 1000);
  }

  /**
   * Signs `measurement` as this node's profile, keeps it and gossips it. Throws ProfileError
   * ('out-of-range', 'malformed', 'stale', 'future', 'not-newer') before anything changes.
   */
  async publish(measurement: ProfileMeasurement): Promise<SignedProfile> {
    const { key, networkName, network, log } = this.#options;
    const profile = await signProfile(measurement, key, networkName);
    const own = this.#liveOwn();
    if (own !== null && profile.body.measured_at <= own.body.measured_at) {
      throw new ProfileError('not-newer', `this node's profile measured at ${own.body.measured_at} is held already`);
    }
    this.#book.offer(profile, this.#nowS());
    this.#own = profile;
    await network.publish(PROFILES_TOPIC, profile.bytes).catch((e: unknown) => log(`profiles: gossip: ${String(e)}`));
    return profile;
  }

  /** The live profiles held, this node's among them, by node id. */
  list(): SignedProfile[] {
    const held = this.#book.list(this.#nowS());
    const own = this.#liveOwn();
    // The book may have dropped this node's own under the pressure of 10,000 others: it still counts.
    if (own !== null && !held.includes(own)) return [...held, own].sort((x, y) => (x.nodeId < y.nodeId ? -1 : 1));
    return held;
  }

  /** The live profile of `nodeId` (hex), or undefined. */
  get(nodeId: string): SignedProfile | undefined {
    if (nodeId === this.#self) return this.#liveOwn() ?? undefined;
    return this.#book.get(nodeId, this.#nowS());
  }

  /** This node's profile while it lives. */
  #liveOwn(): SignedProfile | null {
    const own = this.#own;
    return own !== null && own.body.measured_at + PROFILE_TTL_S > this.#nowS() ? own : null;
  }

  async #onProfile(message: GossipMessage): Promise<Verdict> {
    try {
      const profile = await openProfile(message.data, this.#options.networkName);
      // This node's own profile comes back only as an echo: the one it signed is held already.
      if (profile.nodeId === this.#self) return 'ignore';
      this.#book.offer(profile, this.#nowS());
      return 'accept';
    } catch (error) {
      if (error instanceof ProfileError) {
        if (error.verdict === 'reject') this.#options.log(`profiles: refused a profile from ${toHex(message.peer).slice(0, 16)}…: ${error.message}`);
        return error.verdict;
      }
      throw error;
    }
  }

  async #regossip(): Promise<void> {
    if (this.#own === null) return;
    const own = this.#liveOwn();
    if (own === null) {
      // Expired: stale measurements are not spread; the app measures again.
      this.#own = null;
      this.#options.log("profiles: this node's profile expired; run `mesh profile` to measure again");
      return;
    }
    await this.#options.network.publish(PROFILES_TOPIC, own.bytes).catch((e: unknown) => this.#options.log(`profiles: gossip: ${String(e)}`));
  }
}
