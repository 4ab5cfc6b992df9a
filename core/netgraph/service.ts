/**
 * The measurement layer as services of the node (node-messaging.md §3, docs/netgraph.md,
 * docs/fabric.md): round trips to peers (GET /peers), network coordinates and link samples
 * (GET /netgraph), and node profiles with the fabric statistics (GET /profiles, /fabric/stats).
 */
import type { Chain } from '../chain/chain.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import type { Random } from '../crypto/random.ts';
import type { Startable } from '../lifecycle.ts';
import type { Network } from '../net/network.ts';
import type { AtlasEntry } from '../signal/types.ts';
import type { Clock } from '../time/clock.ts';
import { type FabricStats, fabricStats, knownNodes } from './fabric.ts';
import { NetGraph, type NetgraphLimits, type NetgraphView, netgraphLimitsFor, type RttAnswer } from './netgraph.ts';
import { PeerPings, type PeerView, type PingSchedule } from './peer-pings.ts';
import { type ProfileJson, type ProfileMeasurement, profileJson } from './profile.ts';
import { NodeProfiles } from './profiles.ts';

/** GET /peers. */
export interface PeersService {
  peers(): PeerView[];
}

/** GET /netgraph and /netgraph/rtt. */
export interface NetgraphService {
  readonly nodeId: string;
  view(): NetgraphView;
  /** Measured (pings, or a link sample), else predicted; undefined when neither is known. */
  rtt(to: Uint8Array): RttAnswer | undefined;
}

export interface FabricService {
  /**
   * Signs `measurement` as this node's profile, keeps and gossips it. Throws ProfileError: bounds,
   * stale or future measured_at (400), not newer than the profile held (409).
   */
  publishProfile(measurement: ProfileMeasurement): Promise<ProfileJson>;
  /** The verified, live profiles held (this node's among them), by node id. */
  listProfiles(): ProfileJson[];
  /** The profile held for `nodeId` (hex), or undefined. */
  getProfile(nodeId: string): ProfileJson | undefined;
  fabricStats(): FabricStats;
}

interface Ports {
  readonly network: Network;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
}

/** Pings every connected peer on a schedule (default DEFAULT_PING_SCHEDULE: 10 s ± 25 %). */
export function pingsService(schedule?: Partial<PingSchedule>): (components: Ports) => PeerPings {
  return (c) => new PeerPings({ network: c.network, clock: c.clock, random: c.random, log: c.log, ...(schedule === undefined ? {} : { schedule }) });
}

export interface NetgraphComponents extends Ports {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly pings: PeerPings;
  /** The atlas names nodes the fabric statistics count; profiles, when the node keeps them, too. */
  readonly signals?: { atlas(): AtlasEntry[] };
  readonly profiles?: { knownNodeIds(): string[] };
}

/** Network coordinates and signed link samples, paced by the pings' interval unless `limits` say otherwise. */
export function netgraphService(limits?: Partial<NetgraphLimits>): (components: NetgraphComponents) => NetGraph {
  return (c) =>
    new NetGraph({
      network: c.network,
      pings: c.pings,
      key: c.key,
      networkName: c.chain.params.network,
      clock: c.clock,
      random: c.random,
      log: c.log,
      knownNodes: () => [...(c.signals?.atlas().map((entry) => entry.node_id) ?? []), ...(c.profiles?.knownNodeIds() ?? [])],
      limits: netgraphLimitsFor(c.pings.schedule.intervalMs, limits),
    });
}

export interface ProfilesComponents extends Ports {
  readonly key: SigningKey;
  readonly chain: Chain;
  readonly netgraph: NetGraph;
  readonly signals?: { atlas(): AtlasEntry[] };
}

/** Node profiles, this node's and the mesh's, and the fabric statistics over them. */
export class ProfilesFeature implements FabricService, Startable {
  readonly profiles: NodeProfiles;
  readonly #c: ProfilesComponents;

  constructor(components: ProfilesComponents) {
    this.#c = components;
    this.profiles = new NodeProfiles({
      network: components.network,
      key: components.key,
      networkName: components.chain.params.network,
      clock: components.clock,
      log: components.log,
    });
  }

  start(): void {
    this.profiles.start();
  }

  stop(): void {
    this.profiles.stop();
  }

  /** The nodes whose profiles are held, hex. */
  knownNodeIds(): string[] {
    return this.profiles.list().map((p) => p.nodeId);
  }

  async publishProfile(measurement: ProfileMeasurement): Promise<ProfileJson> {
    return profileJson(await this.profiles.publish(measurement));
  }

  listProfiles(): ProfileJson[] {
    return this.profiles.list().map(profileJson);
  }

  getProfile(nodeId: string): ProfileJson | undefined {
    const profile = this.profiles.get(nodeId);
    return profile === undefined ? undefined : profileJson(profile);
  }

  fabricStats(): FabricStats {
    const profiles = this.profiles.list();
    const atlas = this.#c.signals?.atlas() ?? [];
    const known = knownNodes(this.#c.netgraph.nodeId, atlas, profiles);
    return fabricStats(known, atlas, profiles, this.#c.netgraph.stats());
  }
}

export function profilesService(): (components: ProfilesComponents) => ProfilesFeature {
  return (components) => new ProfilesFeature(components);
}
