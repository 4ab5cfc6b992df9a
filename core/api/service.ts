/**
 * The services the node's HTTP API can serve, each the interface its feature owns. The API mounts
 * the routes of the services it is given: a node without a feature answers 404 on that feature's
 * paths. A node's `services` (core/node/services.ts) are given as they are; tests give fakes.
 */
import type { CapabilitiesService } from '../capabilities/service.ts';
import type { ChannelsService } from '../channels/service.ts';
import type { JobsService } from '../jobs/service.ts';
import type { MessagingService } from '../messaging/service.ts';
import type { NamesService } from '../names/service.ts';
import type { TrafficService } from '../net/traffic.ts';
import type { FabricService, NetgraphService, PeersService } from '../netgraph/service.ts';
import type { ChainService, NodeInfoService } from '../node/ledger-service.ts';
import type { PlacementService } from '../placement/service.ts';
import type { SignalService } from '../signal/service.ts';
import type { TunnelsService } from '../tunnel/service.ts';

export interface ApiServices {
  readonly ledger?: ChainService & NodeInfoService;
  readonly pings?: PeersService;
  readonly netgraph?: NetgraphService;
  readonly signals?: SignalService;
  readonly jobs?: JobsService;
  readonly placement?: PlacementService;
  readonly capabilities?: CapabilitiesService;
  readonly channels?: ChannelsService;
  readonly tunnels?: TunnelsService;
  readonly messaging?: MessagingService;
  readonly names?: NamesService;
  readonly profiles?: FabricService;
  /** Only a host on a network that counts its bytes (libp2p) has it. */
  readonly traffic?: TrafficService;
}
