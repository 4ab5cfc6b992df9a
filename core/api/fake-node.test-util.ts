/**
 * The node's services in memory, one fake per feature, for tests of the HTTP API (handler.test.ts,
 * routes/*.test.ts, host-node/http-server, the client commands): fixed answers, a record of what
 * was asked, settable failures, and listener sets to emit events through and to check that
 * subscriptions end. FakeNode holds one of each and gives them to the API as its services.
 */

import type { CapabilitiesService } from '../capabilities/service.ts';
import type { Token } from '../capabilities/token.ts';
import type { History, TxListItem } from '../chain/readmodel.ts';
import type { TxFeedItem } from '../chain/tx-feed.ts';
import { toHex } from '../encoding/hex.ts';
import type { JobsService } from '../jobs/service.ts';
import type { JobRequest, JobSummary, JobView, LogEvent } from '../jobs/types.ts';
import type { BlockEvent } from '../ledger/block.ts';
import type { Recipient } from '../names/names.ts';
import type { TrafficService } from '../net/traffic.ts';
import type { FabricStats } from '../netgraph/fabric.ts';
import type { NetgraphView, RttAnswer } from '../netgraph/netgraph.ts';
import type { PeerView } from '../netgraph/peer-pings.ts';
import { checkMeasurement, type ProfileJson, type ProfileMeasurement } from '../netgraph/profile.ts';
import type { FabricService, NetgraphService, PeersService } from '../netgraph/service.ts';
import type { ChainService, NodeInfoService, NodeStatus } from '../node/ledger-service.ts';
import type { DeployRequest, KillRequest } from '../placement/caller.ts';
import type { PlacementService } from '../placement/service.ts';
import type { KeptSignal, SignalFilter } from '../signal/book.ts';
import type { SignalRequest, SignalService } from '../signal/service.ts';
import type { AtlasEntry, SignalObject } from '../signal/types.ts';
import { formatAddress } from '../tunnel/address.ts';
import type { TunnelsService } from '../tunnel/service.ts';
import type { TunnelRequest, TunnelView } from '../tunnel/types.ts';
import type { Unsubscribe } from '../web/sse.ts';
import { FakeChannels } from './fake-channels.test-util.ts';
import { FakeMessaging } from './fake-messaging.test-util.ts';
import type { ApiServices } from './service.ts';

export const SELF = '1a'.repeat(32);
export const BOB = 'b2'.repeat(32);
export const TX_ID = 'ab'.repeat(32);
export const SIGNAL_ID = 'cd'.repeat(32);

export const STATUS: NodeStatus = {
  node_id: SELF,
  height: 7,
  difficulty: 0,
  balance: '5000',
  free: '4000',
  locked_bids: '0',
  locked_channels: '1000',
  locked_bond: '0',
  bond: '0',
  weight: '0',
  work_earned: '0',
  unbonding: '0',
  unbond_release_height: null,
  circulating_supply: '7000',
  burned_total: '12',
  unbond_release_secs: null,
  production: { state: 'off', reason: null },
  peers: 2,
  alone: null,
  reachability: 'unknown',
  relay_addresses: [],
};

export const SIGNAL: SignalObject = { from: BOB, to: 'broadcast', capabilities: [{ name: 'cpu', version: 4 }], payload_hex: '', nonce: 3, id: SIGNAL_ID };
export const ATLAS: AtlasEntry[] = [{ node_id: BOB, cpu_cores: 4, mem_mb: 8192, running_jobs: 1, last_seen_secs: 1_700_000_000, tags: ['linux'] }];
export const PEERS: PeerView[] = [
  {
    node_id: BOB,
    multiaddrs: ['/ip4/127.0.0.1/tcp/4002'],
    remote_addr: '/ip4/127.0.0.1/tcp/4002',
    direction: 'outbound',
    connected_since: 1_700_000_000,
    relayed: false,
    height: 7,
    rtt_ms: 1.5,
    rtt_samples: [1, 2],
  },
];
export const FABRIC_STATS: FabricStats = {
  nodes: 2,
  cpu_cores: 12,
  cpu_gflops: 150.5,
  gpus: 1,
  gpu_vram_mb: 24_576,
  gpu_tflops: 80,
  tokens_per_sec: 0,
  storage_free_gb: 100,
  perf_score: 80_150.5,
  mesh: { median_rtt_ms: 1.5, reachable_frac: 1, regions: 1 },
};
/** A node this node holds a gossiped coordinate of, and no measurement. */
export const FAR = '3c'.repeat(32);
const COORD = { vec: [0.001, 0, 0, 0, 0, 0, 0, 0], height: 0.0001, error: 0.2, adjustment: 0 };
export const NETGRAPH: NetgraphView = {
  node_id: SELF,
  coordinate: COORD,
  error: 0.2,
  links: [{ a: SELF, b: BOB, rtt_ms: 1.5, jitter_ms: 0.25, loss: 0, measured_at: 1_700_000_000_000, sig_a: 'aa'.repeat(64), sig_b: 'bb'.repeat(64) }],
  coordinates: [{ node_id: FAR, coordinate: { ...COORD, vec: [0.021, 0, 0, 0, 0, 0, 0, 0] }, updated_at: 1_700_000_000_000 }],
  mesh: { median_rtt_ms: 1.5, reachable_frac: 0.5, regions: 1 },
};
export const RTT_TO_BOB: RttAnswer = { to: BOB, rtt_ms: 1.5, source: 'measured', jitter_ms: 0.25, loss: 0, measured_at: 1_700_000_000_000, samples: 2 };
export const RTT_TO_FAR: RttAnswer = { to: FAR, rtt_ms: 20.2, source: 'predicted', error: 0.4, updated_at: 1_700_000_000_000 };
export const BLOCK: BlockEvent = { index: 8, hash: 'ee'.repeat(32), prev_hash: 'dd'.repeat(32), timestamp: 1_700_000_010, miner: SELF, tx_count: 1, nonce: 0 };

export const JOB_ID = '0b'.repeat(32);
export const CONTAINER_ID = 'c0'.repeat(32);
export const EXPIRE_TX_ID = 'e1'.repeat(32);

/** A job this node paid for: ran on BOB, exited 0, settled at 0.75 of its 1.5-credit bid. */
export const JOB: JobView = {
  job_id: JOB_ID,
  status: 'settled',
  payer: SELF,
  host: BOB,
  role: 'payer',
  container_id: CONTAINER_ID,
  cost: '750000000000000000',
  bid: '1500000000000000000',
  billing: 'settle',
  image: 'localhost/busybox:test',
  cmd: ['sh', '-c', 'echo hi'],
  cpu_cores: 1,
  mem_mb: 64,
  duration_secs: 60,
  gpus: 0,
  created_at: 1_700_000_000,
  started_at: 1_700_000_002,
  finished_at: 1_700_000_005,
  exit_code: 0,
  refusals: [{ host: SELF, reason: 'no gpu', at: 1_700_000_001 }],
  heartbeats: null,
  output_tail: [],
};

/** The job's output: one line on each stream. */
export const JOB_LINES: LogEvent[] = [
  { seq: 1, stream: 'stdout', text: 'hi', at: 1_700_000_003_000 },
  { seq: 2, stream: 'stderr', text: 'warning: none', at: 1_700_000_004_000 },
];

/** A follower of a job's output that the test has not ended yet. */
export interface LogFollower {
  readonly jobId: string;
  readonly after: number;
  readonly listener: (line: LogEvent) => void;
  readonly end: () => void;
}

/**
 * The compute market in memory: the jobs it knows (JOB at first), their output (JOB_LINES, ended),
 * and every call the API made, in order, ids as hex, so a test sees what reached the service and
 * that a refused request reached nothing.
 */
export class FakeJobs implements JobsService {
  readonly jobCalls: { method: keyof JobsService; args: unknown[] }[] = [];
  readonly jobs = new Map<string, JobView>([[JOB_ID, JOB]]);
  lines: LogEvent[] = JOB_LINES;
  /** Whether the output is complete: a follower is then ended once it has every line. */
  linesEnded = true;
  /** Thrown by bidJob, settleJob and expireJob when set. */
  jobError: unknown = undefined;
  readonly logFollowers = new Set<LogFollower>();

  #call(method: keyof JobsService, ...args: unknown[]): void {
    this.jobCalls.push({ method, args: args.map((a) => (a instanceof Uint8Array ? toHex(a) : a)) });
  }

  #failing(): Promise<never> | undefined {
    return this.jobError === undefined ? undefined : Promise.reject(this.jobError);
  }

  bidJob(request: JobRequest): Promise<{ job_id: string }> {
    this.#call('bidJob', request);
    return this.#failing() ?? Promise.resolve({ job_id: JOB_ID });
  }
  listJobs(): JobSummary[] {
    this.#call('listJobs');
    return [...this.jobs.values()].map(({ job_id, status, payer, host, role, container_id, cost, bid }) => ({
      job_id,
      status,
      payer,
      host,
      role,
      container_id,
      cost,
      bid,
    }));
  }
  getJob(jobId: Uint8Array): JobView | undefined {
    this.#call('getJob', jobId);
    return this.jobs.get(toHex(jobId));
  }
  settleJob(jobId: Uint8Array, cost: bigint, payerSig: Uint8Array): Promise<void> {
    this.#call('settleJob', jobId, cost, payerSig);
    return this.#failing() ?? Promise.resolve();
  }
  stopJob(ref: string): Promise<boolean> {
    this.#call('stopJob', ref);
    const named = (job: JobView): boolean => ref === job.job_id || (ref.length >= 12 && job.container_id?.startsWith(ref) === true);
    return Promise.resolve([...this.jobs.values()].some(named));
  }
  expireJob(jobId: Uint8Array): Promise<{ tx_id: string }> {
    this.#call('expireJob', jobId);
    return this.#failing() ?? Promise.resolve({ tx_id: EXPIRE_TX_ID });
  }
  jobLogs(jobId: Uint8Array, after: number): Promise<{ lines: LogEvent[]; ended: boolean } | undefined> {
    this.#call('jobLogs', jobId, after);
    if (!this.jobs.has(toHex(jobId))) return Promise.resolve(undefined);
    return Promise.resolve({ lines: this.lines.filter((line) => line.seq > after), ended: this.linesEnded });
  }
  /** Delivers the lines after `after` at once; then ends, or waits in logFollowers for the test. */
  followJobLogs(jobId: Uint8Array, after: number, listener: (line: LogEvent) => void, end: () => void): Unsubscribe | undefined {
    this.#call('followJobLogs', jobId, after);
    if (!this.jobs.has(toHex(jobId))) return undefined;
    for (const line of this.lines) if (line.seq > after) listener(line);
    if (this.linesEnded) {
      end();
      return () => {};
    }
    return subscribe(this.logFollowers, { jobId: toHex(jobId), after, listener, end });
  }
}

/** Placement in memory: what /mesh-deploy and /mesh-kill passed on, ids as hex; `placementError` is thrown when set. */
export class FakePlacement implements PlacementService {
  placementCalls: { method: 'meshDeploy' | 'meshKill'; request: Record<string, unknown> }[] = [];
  placementError: unknown = undefined;

  meshDeploy(request: DeployRequest): Promise<{ job_id: string }> {
    this.placementCalls.push({ method: 'meshDeploy', request: { ...request, nodeId: toHex(request.nodeId) } });
    return this.placementError === undefined ? Promise.resolve({ job_id: JOB_ID }) : Promise.reject(this.placementError);
  }

  meshKill(request: KillRequest): Promise<void> {
    this.placementCalls.push({ method: 'meshKill', request: { ...request, nodeId: toHex(request.nodeId), jobId: toHex(request.jobId) } });
    return this.placementError === undefined ? Promise.resolve() : Promise.reject(this.placementError);
  }
}

/** Tunnels in memory: what POST /tunnel passed on; each opens a tunnel with the next id, 0000000000000001 first. `tunnelError` is thrown when set. */
export class FakeTunnels implements TunnelsService {
  tunnelCalls: TunnelRequest[] = [];
  tunnelError: unknown = undefined;
  readonly tunnels = new Map<string, TunnelView>();

  openTunnel(request: TunnelRequest): Promise<TunnelView> {
    if (this.tunnelError !== undefined) return Promise.reject(this.tunnelError);
    this.tunnelCalls.push(request);
    const common = {
      id: (this.tunnels.size + 1).toString(16).padStart(16, '0'),
      protocol: request.protocol,
      connections: 0,
      accepted: 0,
      refused: 0,
      created_at: 1_700_000_000,
    };
    const view: TunnelView =
      request.kind === 'listen'
        ? { ...common, kind: 'listen', target: formatAddress(request.target), allow: request.allow.map(toHex) }
        : { ...common, kind: 'forward', node: toHex(request.node), address: formatAddress({ ...request.bind, port: request.bind.port || 40_000 }) };
    this.tunnels.set(view.id, view);
    return Promise.resolve(view);
  }
  listTunnels(): TunnelView[] {
    return [...this.tunnels.values()];
  }
  getTunnel(id: string): TunnelView | undefined {
    return this.tunnels.get(id);
  }
  closeTunnel(id: string): Promise<boolean> {
    return Promise.resolve(this.tunnels.delete(id));
  }
}

/** The ledger in memory: status, history, transfers, bonds and the block and transaction streams. */
export class FakeLedger implements ChainService, NodeInfoService {
  readonly nodeId = SELF;
  transfers: { to: string; amount: bigint }[] = [];
  /** Every /bond and /unbond the node was asked for, in order. */
  stakes: { kind: 'bond' | 'unbond'; amount: bigint }[] = [];
  /** What the next /bond or /unbond throws, if set. */
  stakeError: unknown = undefined;
  /** What GET /status answers. */
  statusAnswer: NodeStatus = STATUS;
  historyAsked: string[] = [];
  pageAsked: { node: string; limit?: number; before?: number }[] = [];
  transferError: unknown = undefined;
  readonly blockListeners = new Set<(event: BlockEvent) => void>();
  readonly txListeners = new Set<(item: TxFeedItem) => void>();
  readonly txFollows: (number | null)[] = [];
  /** Where each /blocks/stream asked to start. */
  readonly blockFollows: (number | null)[] = [];

  status(): NodeStatus {
    return this.statusAnswer;
  }
  history(node: Uint8Array): Promise<History> {
    this.historyAsked.push(toHex(node));
    return Promise.resolve({
      node_id: toHex(node),
      jobs_hosted: 0,
      jobs_paid: 0,
      heartbeats_hosted: 0,
      heartbeats_paid: 0,
      expiries: 0,
      earned: '0',
      spent: '0',
      first_height: 0,
      last_height: 0,
      window_blocks: 259_200,
      recent_earned: '0',
      recent_spent: '0',
      window_partial: false,
    });
  }
  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]> {
    this.pageAsked.push({ node: toHex(node), ...options });
    return Promise.resolve([{ tx_id: TX_ID, height: 5, kind: 'Transfer', amount: '10', counterparty: BOB, direction: 'out' }]);
  }
  beacon(): { height: number; hash: string } {
    return { height: 7, hash: 'ee'.repeat(32) };
  }
  bootstrap(): string[] {
    return ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooW'];
  }
  transfer(to: Recipient, amount: bigint): Promise<string> {
    if (this.transferError !== undefined) return Promise.reject(this.transferError);
    this.transfers.push({ to: typeof to === 'string' ? to : toHex(to), amount });
    return Promise.resolve(TX_ID);
  }
  bond(amount: bigint): Promise<string> {
    return this.#stake('bond', amount);
  }
  unbond(amount: bigint): Promise<string> {
    return this.#stake('unbond', amount);
  }
  #stake(kind: 'bond' | 'unbond', amount: bigint): Promise<string> {
    if (this.stakeError !== undefined) return Promise.reject(this.stakeError);
    this.stakes.push({ kind, amount });
    return Promise.resolve(TX_ID);
  }
  followBlocks(from: number | null, listener: (event: BlockEvent) => void): Unsubscribe {
    this.blockFollows.push(from);
    return subscribe(this.blockListeners, listener);
  }
  followTransactions(after: number | null, listener: (item: TxFeedItem) => void): Unsubscribe {
    this.txFollows.push(after);
    return subscribe(this.txListeners, listener);
  }
}

/** Signals and the atlas in memory: what each signal route asked for and sent. */
export class FakeSignals implements SignalService {
  signalsSent: SignalRequest[] = [];
  signalError: unknown = undefined;
  readonly signalListeners = new Set<(kept: KeptSignal) => void>();
  readonly signalFollows: { after: number | null; filter: SignalFilter }[] = [];
  readonly signalLists: (SignalFilter | undefined)[] = [];

  atlas(): AtlasEntry[] {
    return ATLAS;
  }
  signals(filter?: SignalFilter): SignalObject[] {
    this.signalLists.push(filter);
    return [SIGNAL];
  }
  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }> {
    if (this.signalError !== undefined) return Promise.reject(this.signalError);
    this.signalsSent.push(request);
    return Promise.resolve({ id: SIGNAL_ID, nonce: 4 });
  }
  followSignals(after: number | null, filter: SignalFilter, listener: (kept: KeptSignal) => void): Unsubscribe {
    this.signalFollows.push({ after, filter });
    return subscribe(this.signalListeners, listener);
  }
}

/** The measurement layer in memory: peers, the network graph (fixed), and profiles. */
export class FakeMeasurement implements PeersService, NetgraphService, FabricService {
  readonly nodeId = SELF;
  /** What POST /profiles passed on (after the core's bounds, checked for real); `profileError` is thrown when set. */
  readonly profiles = new Map<string, ProfileJson>();
  profileError: unknown = undefined;

  peers(): PeerView[] {
    return PEERS;
  }
  view(): NetgraphView {
    return NETGRAPH;
  }
  rtt(to: Uint8Array): RttAnswer | undefined {
    return [RTT_TO_BOB, RTT_TO_FAR].find((answer) => answer.to === toHex(to));
  }
  publishProfile(measurement: ProfileMeasurement): Promise<ProfileJson> {
    if (this.profileError !== undefined) return Promise.reject(this.profileError);
    checkMeasurement(measurement);
    const profile = { node_id: SELF, ...measurement, signature: '5e'.repeat(64) };
    this.profiles.set(SELF, profile);
    return Promise.resolve(profile);
  }
  listProfiles(): ProfileJson[] {
    return [...this.profiles.values()];
  }
  getProfile(nodeId: string): ProfileJson | undefined {
    return this.profiles.get(nodeId);
  }
  fabricStats(): FabricStats {
    return { ...FABRIC_STATS, mesh: { ...FABRIC_STATS.mesh } };
  }
}

/** Revocations and trust in memory: each call recorded; the real logic is tested on a node (routes/capabilities.test.ts). */
export class FakeCapabilities implements CapabilitiesService {
  grantCalls: { method: 'revokeCapability' | 'setTrust'; args: unknown[] }[] = [];

  revokeCapability(token: Token, link: number | undefined): Promise<{ token_id: string; tx_id: string }> {
    this.grantCalls.push({ method: 'revokeCapability', args: [token.length, link] });
    return Promise.resolve({ token_id: TX_ID, tx_id: TX_ID });
  }
  setTrust(subject: Uint8Array, trusted: boolean): Promise<{ tx_id: string }> {
    this.grantCalls.push({ method: 'setTrust', args: [toHex(subject), trusted] });
    return Promise.resolve({ tx_id: TX_ID });
  }
}

/** The network's byte counts, fixed. */
export const TRAFFIC: Record<string, number> = { 'gossipsub-control': 4_200, 'mesh-blocks': 12_345, ping: 640, 'rpc sync.blocks': 99 };

export class FakeTraffic implements TrafficService {
  traffic(): Record<string, number> {
    return { ...TRAFFIC };
  }
}

/** One fake per service, given to the API as the node's services. */
export class FakeNode {
  readonly nodeId = SELF;
  readonly ledger = new FakeLedger();
  readonly signals = new FakeSignals();
  /** Peers, the network graph and profiles. */
  readonly measurement = new FakeMeasurement();
  readonly jobs = new FakeJobs();
  readonly placement = new FakePlacement();
  readonly capabilities = new FakeCapabilities();
  readonly channels = new FakeChannels();
  readonly tunnels = new FakeTunnels();
  /** App messaging and names (fake-messaging.test-util.ts). */
  readonly messaging = new FakeMessaging();
  readonly traffic = new FakeTraffic();

  get services(): Required<ApiServices> {
    const { ledger, signals, measurement, jobs, placement, capabilities, channels, tunnels, messaging, traffic } = this;
    return {
      ledger,
      signals,
      pings: measurement,
      netgraph: measurement,
      profiles: measurement,
      jobs,
      placement,
      capabilities,
      channels,
      tunnels,
      messaging,
      names: messaging,
      traffic,
    };
  }
}

function subscribe<T>(set: Set<T>, listener: T): Unsubscribe {
  set.add(listener);
  return () => {
    set.delete(listener);
  };
}
