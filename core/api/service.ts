/**
 * What the node's HTTP API (node-api.md §4–§6) asks of the node behind it: the sum of what each
 * feature's routes need (core/api/routes/). A class implementing it (core/node/node.ts) holds the
 * chain, mempool, network and signals; tests may implement it over a memory chain.
 */
import type { CapabilitiesService } from './routes/capabilities.ts';
import type { ChainService } from './routes/chain.ts';
import type { ChannelsService } from './routes/channels.ts';
import type { FabricService } from './routes/fabric.ts';
import type { JobsService } from './routes/jobs.ts';
import type { MessagingService } from './routes/messaging.ts';
import type { NamesService } from './routes/names.ts';
import type { NodeInfoService } from './routes/node.ts';
import type { NetgraphService } from './routes/netgraph.ts';
import type { PeersService } from './routes/peers.ts';
import type { PlacementService } from './routes/placement.ts';
import type { SignalService } from './routes/signals.ts';
import type { TunnelsService } from './routes/tunnel.ts';

export type { TxFeedItem, TxStreamEvent } from './routes/chain.ts';
export type { NodeStatus } from './routes/node.ts';
export type { PeerView, PeersService } from './routes/peers.ts';
export type { NetgraphService } from './routes/netgraph.ts';
export type { SignalRequest } from './routes/signals.ts';
export type { JobsService } from './routes/jobs.ts';
export type { CapabilitiesService } from './routes/capabilities.ts';
export type { ChannelsService } from './routes/channels.ts';
export type { TunnelsService } from './routes/tunnel.ts';
export type { MessagingService } from './routes/messaging.ts';
export type { NamesService } from './routes/names.ts';
export type { FabricService } from './routes/fabric.ts';
export type { Unsubscribe } from '../web/sse.ts';

export interface NodeService extends NodeInfoService, PeersService, NetgraphService, ChainService, SignalService, JobsService, PlacementService, CapabilitiesService, ChannelsService, TunnelsService, MessagingService, NamesService, FabricService {}
