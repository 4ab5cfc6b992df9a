/**
 * The services a node is made of, in the order they start. A full node (`mesh node`) runs every
 * feature; the browser's light node runs what its wallet uses. A new feature is one service
 * folder and one line here.
 */
import { capabilitiesService, type Grants } from '../capabilities/grants.ts';
import { type ChannelDesk, type ChannelsConfig, channelsService } from '../channels/channels.ts';
import { type JobMarket, type JobsConfig, jobsService } from '../jobs/market.ts';
import type { MessagingLimits } from '../messaging/messaging.ts';
import { type MessagingFeature, messagingService } from '../messaging/service.ts';
import { type Names, namesService } from '../names/names.ts';
import type { NetGraph, NetgraphLimits } from '../netgraph/netgraph.ts';
import type { PeerPings, PingSchedule } from '../netgraph/peer-pings.ts';
import { netgraphService, type ProfilesFeature, pingsService, profilesService } from '../netgraph/service.ts';
import { type PlacementFeature, type PlacementInit, placementService } from '../placement/service.ts';
import type { Capacity } from '../signal/atlas.ts';
import { type CapacityBroadcast, capacityService } from '../signal/capacity-service.ts';
import { type SignalsFeature, signalsService } from '../signal/service.ts';
import type { KeyValueStore } from '../store/kv.ts';
import { type TunnelsFeature, tunnelsService } from '../tunnel/service.ts';
import type { TunnelSockets } from '../tunnel/sockets.ts';
import { type AloneInit, type AloneWatch, aloneService } from './alone-service.ts';
import { productionService } from './block-producer.ts';
import { type EvidenceFeature, evidenceService } from './evidence-service.ts';
import { type LedgerFeature, ledgerService } from './ledger-service.ts';
import type { ServiceFactories } from './node.ts';
import { type PeerRanks, peerRanksService } from './peer-ranks.ts';
import { type SyncFeature, type SyncInit, syncService } from './sync-service.ts';

/** What a full node is set up with beyond its components. */
export interface FullNodeInit extends SyncInit {
  /** Produce blocks (`--mine`). */
  readonly mine: boolean;
  /** Where the producer's slashing-protection record is kept (default: memory, for this run only). */
  readonly slashingProtection?: { readonly store: KeyValueStore };
  /** How long the producer only watches for its own key's blocks after it starts (default 0). */
  readonly doppelgangerWaitMs?: number;
  /**
   * This machine's capacity, for the atlas (read again at every broadcast). Without it the node
   * offers no compute and broadcasts no capacity.
   */
  readonly capacity?: () => Capacity;
  readonly capacityIntervalMs?: number;
  /** The compute market: where jobs are kept, what this node hosts (default: it hosts nothing). */
  readonly jobs?: JobsConfig;
  /** Directed placement: the capability roots it honours besides this node's key. */
  readonly placement?: PlacementInit;
  /** Payment channels: where they are kept (default: memory). */
  readonly channels?: ChannelsConfig;
  /** TCP for tunnels (docs/tunnel.md), from the host; without it the node refuses tunnels (503). */
  readonly tunnel?: { readonly sockets: TunnelSockets };
  /** App messaging's bounds (default MESSAGING_LIMITS and INBOX_LIMITS; smaller in tests). */
  readonly messaging?: Partial<MessagingLimits>;
  /** How often peers are pinged for GET /peers (default DEFAULT_PING_SCHEDULE: 10 s ± 25 %, 5 samples). */
  readonly pings?: Partial<PingSchedule>;
  /** The network graph's bounds and pace (default: netgraphLimitsFor the ping interval). */
  readonly netgraph?: Partial<NetgraphLimits>;
  /** What a node without peers is told to do, once a minute (default DEFAULT_ALONE_ADVICE). */
  readonly alone?: AloneInit;
}

export interface FullNodeServices {
  readonly ledger: LedgerFeature;
  readonly sync: SyncFeature;
  readonly evidence: EvidenceFeature;
  readonly signals: SignalsFeature;
  readonly pings: PeerPings;
  readonly netgraph: NetGraph;
  readonly profiles: ProfilesFeature;
  readonly names: Names;
  readonly messaging: MessagingFeature;
  readonly capabilities: Grants;
  readonly channels: ChannelDesk;
  readonly jobs: JobMarket;
  readonly placement: PlacementFeature;
  readonly tunnels: TunnelsFeature;
  readonly alone: AloneWatch;
  readonly peerRanks: PeerRanks;
  /** Present with `mine`. */
  readonly producer?: ReturnType<ReturnType<typeof productionService>>;
  /** Present with `capacity`. */
  readonly capacity?: CapacityBroadcast;
}

/** Every feature: what `mesh node` runs. */
export function fullNodeServices(init: FullNodeInit): ServiceFactories<FullNodeServices> {
  return {
    ledger: ledgerService(),
    sync: syncService(init),
    evidence: evidenceService({ report: init.mine }),
    signals: signalsService(),
    pings: pingsService(init.pings),
    netgraph: netgraphService(init.netgraph),
    profiles: profilesService(),
    names: namesService(),
    messaging: messagingService(init.messaging),
    capabilities: capabilitiesService(),
    channels: channelsService(init.channels),
    jobs: jobsService(init.jobs),
    placement: placementService(init.placement),
    tunnels: tunnelsService(init.tunnel),
    alone: aloneService(init.alone),
    peerRanks: peerRanksService(),
    ...(init.mine
      ? {
          producer: productionService({
            ...init.slashingProtection,
            ...(init.doppelgangerWaitMs === undefined ? {} : { doppelgangerWaitMs: init.doppelgangerWaitMs }),
          }),
        }
      : {}),
    ...(init.capacity === undefined
      ? {}
      : { capacity: capacityService({ probe: init.capacity, ...(init.capacityIntervalMs === undefined ? {} : { intervalMs: init.capacityIntervalMs }) }) }),
  };
}

export interface LightNodeServices {
  readonly ledger: LedgerFeature;
  readonly sync: SyncFeature;
  readonly evidence: EvidenceFeature;
}

/**
 * What the wallet uses: the chain (balances, history, transfers, the block stream) and sync; and,
 * as every node does, it passes on the equivocation evidence it sees.
 */
export function lightNodeServices(init: SyncInit = {}): ServiceFactories<LightNodeServices> {
  return { ledger: ledgerService(), sync: syncService(init), evidence: evidenceService() };
}
