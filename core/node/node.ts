/**
 * A mesh node: the chain, its mempool, sync, block production, signals and the atlas, joined to the
 * network port. It is what the HTTP API serves (NodeService) and what hosts start: the Node host
 * gives it a LevelDB store and libp2p, the browser host an IndexedDB store and libp2p in the page.
 */
import type { NodeService, NodeStatus, PeerView, SignalRequest, TxFeedItem, Unsubscribe } from '../api/service.ts';
import { Grants } from '../capabilities/grants.ts';
import type { Token } from '../capabilities/token.ts';
import { ChannelDesk, type ChannelsConfig } from '../channels/channels.ts';
import type { ChannelView, CloseAnswer, ExpireAnswer, OpenRequest, Receipt, ReceiptAnswer } from '../channels/types.ts';
import { JobMarket, type JobsConfig } from '../jobs/market.ts';
import type { JobRequest, JobSummary, JobView, LogEvent } from '../jobs/types.ts';
import type { DeployRequest, KillRequest } from '../placement/caller.ts';
import { TunnelError } from '../tunnel/errors.ts';
import { TunnelService } from '../tunnel/service.ts';
import type { TunnelSockets } from '../tunnel/sockets.ts';
import type { TunnelRequest, TunnelView } from '../tunnel/types.ts';
import type { InboxEvent, InboxSnapshot } from '../messaging/inbox.ts';
import { Messaging, type MessagingLimits, type PublishAnswer, type OutgoingMessage, type ReplyAnswer, type SendAnswer, type SendBatchAnswer, type SubscribeAnswer } from '../messaging/messaging.ts';
import { Names, type NameRecord, type Recipient } from '../names/names.ts';
import { ForkChoiceError, type Chain, type ChainEvent } from '../chain/chain.ts';
import { Mempool, MempoolError } from '../chain/mempool.ts';
import { RecentSet } from '../collections/recent-set.ts';
import type { History, TxListItem } from '../chain/readmodel.ts';
import type { SigningKey } from '../crypto/ed25519.ts';
import { systemRandom, type Random } from '../crypto/random.ts';
import { bytesKey } from '../encoding/bytes.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError } from '../errors.ts';
import { LedgerRuleError, type TxEffect } from '../ledger/apply.ts';
import { decodeBlock, InvalidBlockError, type Block, type BlockEvent } from '../ledger/block.ts';
import { ledgerStatus } from '../ledger/status.ts';
import { decodeTx, STREAM_KINDS, type Tx } from '../ledger/tx.ts';
import { NetGraph, netgraphLimitsFor, type NetgraphLimits, type NetgraphView, type RttAnswer } from '../netgraph/netgraph.ts';
import { TOPICS, type GossipMessage, type Network, type Verdict } from '../net/network.ts';
import { Atlas, CAPACITY_INTERVAL_MS, capacityCapabilities, type Capacity } from '../signal/atlas.ts';
import { chainBurnLookup, SignalBook, type KeptSignal, type SignalFilter } from '../signal/book.ts';
import { SignalError } from '../signal/errors.ts';
import { decodeSignal, signSignal } from '../signal/signal.ts';
import type { AtlasEntry, SignalObject } from '../signal/types.ts';
import { systemClock, type Clock, type Timer } from '../time/clock.ts';
import type { Flow } from '../web/sse.ts';
import { BlockProducer } from './block-producer.ts';
import { followBlocks } from './block-feed.ts';
import { PeerPings, PING_INTERVAL_MS, type PingSchedule } from './peer-pings.ts';
import { NodeProfiles } from './profiles.ts';
import { fabricStats, knownNodes, type FabricStats } from '../netgraph/fabric.ts';
import { profileJson, type ProfileJson, type ProfileMeasurement } from '../netgraph/profile.ts';
import { OwnTransactions } from './own-transactions.ts';
import { Segments } from './segments.ts';
import { Sync } from './sync.ts';
import { TxFeed } from './tx-feed.ts';

export interface MeshNodeOptions {
  readonly chain: Chain;
  readonly network: Network;
  readonly key: SigningKey;
  /** Produce blocks (`--mine`). */
  readonly mine: boolean;
  /**
   * This machine's capacity, for the atlas (read again at every broadcast). Without it the node
   * offers no compute and broadcasts no capacity (the browser's wallet).
   */
  readonly capacity?: () => Capacity;
  /** Time and timers (default: the system clock). */
  readonly clock?: Clock;
  /** Request ids of sync and segments (default: the platform's CSPRNG). */
  readonly random?: Random;
  readonly log?: (line: string) => void;
  /** How often the tip is announced on mesh-heights besides on every new peer (default 15 s). */
  readonly announceIntervalMs?: number;
  readonly capacityIntervalMs?: number;
  readonly syncTimeoutMs?: number;
  /** Bytes of state per light-node segment (default MAX_SEGMENT_BYTES; smaller in tests). */
  readonly segmentBytes?: number;
  /** The compute market: where jobs are kept, what this node hosts (default: it hosts nothing). */
  readonly jobs?: JobsConfig;
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
}

// Transaction ids already put on /transactions/stream (so each appears once).
const STREAMED_MEMORY = 50_000;
// Blocks whose parent is unknown make the node sync from the peer that sent them; this bounds how often.
const SYNC_NUDGE_MS = 1_000;

export class MeshNode implements NodeService {
  readonly nodeId: string;
  readonly chain: Chain;
  readonly mempool: Mempool;
  readonly sync: Sync;
  /** Serves (and fetches) the state at checkpoints for light nodes. */
  readonly segments: Segments;
  readonly #network: Network;
  readonly #key: SigningKey;
  readonly #clock: Clock;
  readonly #log: (line: string) => void;
  readonly #options: MeshNodeOptions;
  readonly #producer: BlockProducer | null;
  readonly #book: SignalBook;
  readonly #atlas = new Atlas();
  readonly #txFeed: TxFeed;
  readonly #streamed = new RecentSet<string>(STREAMED_MEMORY);
  readonly #timers: Timer[] = [];
  readonly #joinTimers = new Set<Timer>();
  #unsubscribeChain: (() => void) | null = null;
  #unsubscribePeers: (() => void) | null = null;
  /** This node's own transactions, of every kind: signed, pooled, streamed and gossiped in one place. */
  readonly own: OwnTransactions;
  // Local signals are serialised so each takes the next nonce.
  #sending: Promise<unknown> = Promise.resolve();
  #lastNudge = 0;
  #market: JobMarket | null = null;
  readonly #grants: Grants;
  #channels: ChannelDesk | null = null;
  readonly #tunnels: TunnelService | null;
  readonly #names: Names;
  /** App messaging: directed messages, request and reply, pub/sub, the inbox. */
  readonly messaging: Messaging;
  /** Round-trip times to the connected peers. */
  readonly pings: PeerPings;
  /** Node profiles: this node's, signed for the app that measured it, and the mesh's, verified (docs/fabric.md). */
  readonly profiles: NodeProfiles;
  /** Network coordinates and signed link samples (core/netgraph/). */
  readonly netgraph: NetGraph;

  constructor(options: MeshNodeOptions) {
    this.#options = options;
    this.chain = options.chain;
    this.#network = options.network;
    this.#key = options.key;
    this.nodeId = toHex(options.key.publicKey);
    this.#clock = options.clock ?? systemClock;
    this.#txFeed = new TxFeed(() => this.#clock.now());
    const ports = { clock: this.#clock, random: options.random ?? systemRandom };
    this.#log = options.log ?? (() => {});
    this.mempool = new Mempool(this.chain);
    this.own = new OwnTransactions({
      key: this.#key,
      chain: this.chain,
      mempool: this.mempool,
      stream: (tx, amount) => this.#streamTx(tx, amount),
      publish: (tx) => this.#network.publish(TOPICS.transactions, tx.bytes).catch((e: unknown) => this.#log(`gossip: ${String(e)}`)),
    });
    this.#grants = new Grants({ key: this.#key, chain: this.chain, own: this.own, mempool: this.mempool });
    this.#tunnels = options.tunnel
      ? new TunnelService({ network: this.#network, sockets: options.tunnel.sockets, ...ports, log: this.#log })
      : null;
    this.#names = new Names({ chain: this.chain, own: this.own });
    this.messaging = new Messaging({
      network: this.#network,
      key: this.#key,
      networkName: this.chain.params.network,
      ...ports,
      log: this.#log,
      ...(options.messaging === undefined ? {} : { limits: options.messaging }),
    });
    this.sync = new Sync({
      chain: this.chain,
      network: this.#network,
      ...ports,
      log: this.#log,
      ...(options.syncTimeoutMs === undefined ? {} : { timeoutMs: options.syncTimeoutMs }),
    });
    this.segments = new Segments(this.#network, this.chain.params, this.chain, { ...ports, ...(options.segmentBytes === undefined ? {} : { segmentBytes: options.segmentBytes }) });
    this.pings = new PeerPings({
      network: this.#network,
      ...ports,
      log: this.#log,
      ...(options.pings === undefined ? {} : { schedule: options.pings }),
    });
    this.netgraph = new NetGraph({
      network: this.#network,
      pings: this.pings,
      key: this.#key,
      networkName: this.chain.params.network,
      ...ports,
      log: this.#log,
      // The nodes the atlas and the profiles name: what the fabric statistics count.
      knownNodes: () => [...this.atlas().map((entry) => entry.node_id), ...this.profiles.list().map((p) => p.nodeId)],
      limits: netgraphLimitsFor(options.pings?.intervalMs ?? PING_INTERVAL_MS, options.netgraph),
    });
    this.profiles = new NodeProfiles({ network: this.#network, key: this.#key, networkName: this.chain.params.network, clock: this.#clock, log: this.#log });
    this.#book = new SignalBook({
      clock: this.#clock,
      network: this.chain.params.network,
      self: options.key.publicKey,
      lookupBurn: chainBurnLookup(this.chain),
      locateTx: (id) => this.chain.txHeight(id),
    });
    // Capacity broadcasts are kept signals like any other; the atlas reads them from the book.
    this.#book.subscribe((signal) => this.#atlas.observe(signal, this.#clock.now()));
    this.#producer = options.mine
      ? new BlockProducer({
          chain: this.chain,
          mempool: this.mempool,
          key: this.#key,
          publish: (block) => this.#network.publish(TOPICS.blocks, block.bytes),
          behind: () => this.sync.behind,
          clock: this.#clock,
          log: this.#log,
        })
      : null;
  }

  get mining(): boolean {
    return this.#producer !== null;
  }

  /** Joins the topics, announces the tip, starts producing (when mining) and the atlas broadcast. */
  async start(): Promise<void> {
    const network = this.#network;
    network.handle(TOPICS.blocks, (m) => this.#onBlock(m));
    network.handle(TOPICS.transactions, (m) => this.#onTransaction(m));
    network.handle(TOPICS.signals, (m) => this.#onSignal(m));
    this.segments.start();
    this.messaging.start();
    this.netgraph.start();
    this.pings.start();
    this.profiles.start();
    this.#unsubscribeChain = this.chain.subscribe((event) => this.#onChain(event));
    // A node announces its height to each peer that joins (node-api.md §6).
    // The network reports the join once a publish reaches the peer; again after 1 s and 3 s all the
    // same, in case the first is lost.
    this.#unsubscribePeers = network.onPeerJoined(() => {
      const announce = (): void => void this.sync.announce().catch(() => {});
      announce();
      for (const delay of [1_000, 3_000]) {
        const timer = this.#clock.setTimeout(() => {
          this.#joinTimers.delete(timer);
          announce();
        }, delay);
        this.#joinTimers.add(timer);
      }
    });
    // Before sync: every block connected from here on is folded into the channel book.
    this.#channels = await ChannelDesk.open(
      { chain: this.chain, mempool: this.mempool, own: this.own, network, key: this.#key, clock: this.#clock, log: this.#log },
      this.#options.channels,
    );
    await this.#channels.start();
    this.sync.start();
    this.#market = await JobMarket.open(
      { chain: this.chain, mempool: this.mempool, own: this.own, network, key: this.#key, clock: this.#clock, atlas: () => this.atlas(), log: this.#log },
      this.#options.jobs,
    );
    await this.#market.start();
    this.#timers.push(this.#clock.setInterval(() => void this.sync.announce().catch(() => {}), this.#options.announceIntervalMs ?? 15_000));
    await this.sync.announce().catch(() => {});
    this.#producer?.start();
    const capacity = this.#options.capacity;
    if (capacity !== undefined) {
      const capacityEvery = this.#options.capacityIntervalMs ?? CAPACITY_INTERVAL_MS;
      this.#timers.push(this.#clock.setInterval(() => void this.#broadcastCapacity(capacity), capacityEvery));
      // The first capacity broadcast goes out once peers had a moment to connect.
      this.#timers.push(this.#clock.setTimeout(() => void this.#broadcastCapacity(capacity), Math.min(2_000, capacityEvery)));
    }
  }

  async stop(): Promise<void> {
    for (const t of this.#timers) t.cancel();
    this.#timers.length = 0;
    for (const t of this.#joinTimers) t.cancel();
    this.#joinTimers.clear();
    await this.#tunnels?.stop();
    await this.#producer?.stop();
    await this.#market?.stop();
    await this.#channels?.stop();
    this.messaging.stop();
    this.pings.stop();
    this.profiles.stop();
    this.netgraph.stop();
    this.sync.stop();
    this.#unsubscribeChain?.();
    this.#unsubscribePeers?.();
    this.mempool.close();
    await Promise.all([this.#sending, this.own.idle()]);
  }

  // ---- NodeService ----

  status(): NodeStatus {
    const tip = this.chain.tip;
    return { node_id: this.nodeId, height: tip.height, difficulty: 0, ...ledgerStatus(this.chain.state, this.#key.publicKey, tip.height) };
  }

  history(node: Uint8Array): Promise<History> {
    return this.chain.history(node);
  }

  transactions(node: Uint8Array, options: { limit?: number; before?: number }): Promise<TxListItem[]> {
    return this.chain.transactions(node, options);
  }

  beacon(): { height: number; hash: string } {
    return this.chain.beacon();
  }

  bootstrap(): string[] {
    return this.#network.bootstrapAddresses();
  }

  peers(): PeerView[] {
    return this.#network.peers().map((peer) => {
      const rtt = this.pings.figures(peer.node);
      return {
        node_id: toHex(peer.node),
        multiaddrs: [...peer.multiaddrs],
        remote_addr: peer.remoteAddr,
        direction: peer.direction,
        connected_since: Math.floor(peer.connectedSince / 1000),
        height: peer.height,
        rtt_ms: rtt.medianMs,
        rtt_samples: [...rtt.samplesMs],
      };
    });
  }

  netgraphView(): NetgraphView {
    return this.netgraph.view();
  }

  netgraphRtt(to: Uint8Array): RttAnswer | undefined {
    return this.netgraph.rtt(to);
  }

  atlas(): AtlasEntry[] {
    return this.#atlas.entries(this.#clock.now());
  }

  signals(filter?: SignalFilter): SignalObject[] {
    return this.#book.list(filter);
  }

  async transfer(to: Recipient, amount: bigint): Promise<string> {
    return toHex((await this.own.submit({ kind: 'Transfer', to: this.#names.recipient(to), amount })).id);
  }

  sendSignal(request: SignalRequest): Promise<{ id: string; nonce: number }> {
    return this.#serial(async () => {
      const proof = request.burnTxId === null ? null : await this.#book.burnProof(request.burnTxId);
      if (request.payload.length > 0 && proof === null) {
        throw new SignalError('burn-proof-required', 'a signal with a payload needs burn_tx_id_hex');
      }
      const signal = await signSignal(
        { to: request.to, capabilities: request.capabilities, payload: request.payload, burn_proof: proof, nonce: this.#book.nextNonce(this.#clock.now()) },
        this.#key,
        this.chain.params.network,
      );
      const shown = await this.#book.accept(signal);
      await this.#network.publish(TOPICS.signals, signal.bytes).catch((e: unknown) => this.#log(`gossip: ${String(e)}`));
      return { id: shown.id, nonce: shown.nonce };
    });
  }

  /** The main chain's blocks from `from` on (null: from the next), replayed at the pace `flow` allows, then live (block-feed.ts). */
  followBlocks(from: number | null, listener: (event: BlockEvent) => void, flow?: Flow, end?: () => void): Unsubscribe {
    return followBlocks(this.chain, from, listener, {
      ...(flow === undefined ? {} : { flow }),
      onError: (error) => {
        this.#log(`blocks stream: ${String(error)}`);
        end?.();
      },
    });
  }

  /** The transactions put on /transactions/stream from now on, after those still held past position `after` (tx-feed.ts). */
  followTransactions(after: number | null, listener: (item: TxFeedItem) => void): Unsubscribe {
    return this.#txFeed.follow(after, (item) => {
      try {
        listener(item);
      } catch (error) {
        this.#log(`listener: ${String(error)}`);
      }
    });
  }

  /**
   * The signals the book keeps (broadcast or addressed to this node) that pass `filter`, as they are
   * kept, after those still kept above position `after`: the stream shows what GET /signals lists,
   * not signals between other nodes that pass through (docs/signals.md).
   */
  followSignals(after: number | null, filter: SignalFilter, listener: (kept: KeptSignal) => void): Unsubscribe {
    return this.#book.follow(after, filter, (kept) => {
      try {
        listener(kept);
      } catch (error) {
        this.#log(`listener: ${String(error)}`);
      }
    });
  }

  // ---- jobs (core/jobs/market.ts) ----

  get jobs(): JobMarket {
    if (this.#market === null) throw new Error('the node has not started');
    return this.#market;
  }

  bidJob(request: JobRequest): Promise<{ job_id: string }> {
    return this.jobs.bidJob(request);
  }

  listJobs(): JobSummary[] {
    return this.jobs.listJobs();
  }

  getJob(jobId: Uint8Array): JobView | undefined {
    return this.jobs.getJob(jobId);
  }

  settleJob(jobId: Uint8Array, cost: bigint, payerSig: Uint8Array): Promise<void> {
    return this.jobs.settleJob(jobId, cost, payerSig);
  }

  stopJob(ref: string): Promise<boolean> {
    return this.jobs.stopJob(ref);
  }

  expireJob(jobId: Uint8Array): Promise<{ tx_id: string }> {
    return this.jobs.expireJob(jobId);
  }

  jobLogs(jobId: Uint8Array, after: number): Promise<{ lines: LogEvent[]; ended: boolean } | undefined> {
    return this.jobs.jobLogs(jobId, after);
  }

  followJobLogs(jobId: Uint8Array, after: number, listener: (line: LogEvent) => void, end: () => void): Unsubscribe | undefined {
    return this.jobs.followJobLogs(jobId, after, listener, end);
  }

  // ---- directed placement (core/placement/, through the market) ----

  meshDeploy(request: DeployRequest): Promise<{ job_id: string }> {
    return this.jobs.meshDeploy(request);
  }

  meshKill(request: KillRequest): Promise<void> {
    return this.jobs.meshKill(request);
  }

  // ---- capabilities (core/capabilities/grants.ts) ----

  revokeCapability(token: Token, link: number | undefined): Promise<{ token_id: string; tx_id: string }> {
    return this.#grants.revoke(token, link);
  }

  setTrust(subject: Uint8Array, trusted: boolean): Promise<{ tx_id: string }> {
    return this.#grants.trust(subject, trusted);
  }

  // ---- payment channels (core/channels/channels.ts) ----

  get channels(): ChannelDesk {
    if (this.#channels === null) throw new Error('the node has not started');
    return this.#channels;
  }

  openChannel(request: OpenRequest): Promise<{ channel_id: string; expiry_height: number }> {
    return this.channels.openChannel(request);
  }

  signReceipt(channelId: Uint8Array, host: Uint8Array, cumulative: bigint): Promise<ReceiptAnswer> {
    return this.channels.signReceipt(channelId, host, cumulative);
  }

  closeChannel(channelId: Uint8Array, receipt: Receipt | null): Promise<CloseAnswer> {
    return this.channels.closeChannel(channelId, receipt);
  }

  expireChannel(channelId: Uint8Array): Promise<ExpireAnswer> {
    return this.channels.expireChannel(channelId);
  }

  listChannels(): ChannelView[] {
    return this.channels.listChannels();
  }

  getChannel(channelId: Uint8Array): ChannelView | undefined {
    return this.channels.getChannel(channelId);
  }

  // ---- tunnels (core/tunnel/service.ts) ----

  openTunnel(request: TunnelRequest): Promise<TunnelView> {
    if (this.#tunnels === null) return Promise.reject(new TunnelError('unavailable', 'this host gives the node no TCP sockets for tunnels'));
    return this.#tunnels.open(request);
  }

  listTunnels(): TunnelView[] {
    return this.#tunnels?.list() ?? [];
  }

  getTunnel(id: string): TunnelView | undefined {
    return this.#tunnels?.get(id);
  }

  closeTunnel(id: string): Promise<boolean> {
    return this.#tunnels?.close(id) ?? Promise.resolve(false);
  }

  // ---- app messaging (core/messaging/), `to` a node or a name ----

  sendMessage(to: Recipient, topic: string, payload: Uint8Array): Promise<SendAnswer> {
    return this.messaging.send(this.#names.recipient(to), topic, payload);
  }

  sendMessages(to: Recipient, messages: readonly OutgoingMessage[]): Promise<SendBatchAnswer> {
    return this.messaging.sendMany(this.#names.recipient(to), messages);
  }

  requestMessage(to: Recipient, topic: string, payload: Uint8Array, timeoutMs: number): Promise<ReplyAnswer> {
    return this.messaging.request(this.#names.recipient(to), topic, payload, timeoutMs);
  }

  replyMessage(token: string, payload: Uint8Array): void {
    this.messaging.reply(token, payload);
  }

  subscribeTopic(topic: string): SubscribeAnswer {
    return this.messaging.subscribe(topic);
  }

  publishMessage(topic: string, payload: Uint8Array): Promise<PublishAnswer> {
    return this.messaging.publish(topic, payload);
  }

  inboxSnapshot(after: number, topic: string | null): InboxSnapshot {
    return this.messaging.inbox.snapshot(after, topic);
  }

  followInbox(after: number | null, topic: string | null, listener: (event: InboxEvent) => void): Unsubscribe {
    return this.messaging.inbox.follow(after, topic, listener);
  }

  // ---- names (core/names/) ----

  claimName(name: string): Promise<{ name: string; tx_id: string }> {
    return this.#names.claim(name);
  }

  resolveName(name: string): NameRecord | undefined {
    return this.#names.resolve(name);
  }

  listNames(owner: Uint8Array | null): NameRecord[] {
    return this.#names.namesOf(owner ?? this.#key.publicKey);
  }

  // ---- node profiles and fabric statistics (core/node/profiles.ts, core/netgraph/fabric.ts) ----

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
    const atlas = this.atlas();
    const known = knownNodes(this.nodeId, atlas, profiles);
    return fabricStats(known, atlas, profiles, this.netgraph.stats());
  }

  // ---- gossip ----

  async #onBlock(message: GossipMessage): Promise<Verdict> {
    let block: Block;
    try {
      block = decodeBlock(this.chain.params.network, message.data, this.chain.crypto.sha256);
    } catch {
      return 'reject';
    }
    try {
      const outcome = await this.chain.addBlock(block, this.#clock.now());
      // Only blocks this node fully validated (it moved its tip to them) are passed on. A block kept
      // aside was checked for its signature only: a peer one block behind would validate it in
      // full, and blame this node for relaying it if it were invalid. Peers that need a competing
      // branch get it by sync once it grows longer.
      return outcome === 'extended' || outcome === 'reorganized' ? 'accept' : 'ignore';
    } catch (error) {
      if (error instanceof InvalidBlockError) {
        if (error.verdict !== 'reject') return error.verdict;
        this.#log(`gossip: block ${block.header.height} from ${toHex(message.peer).slice(0, 16)}… is invalid: ${error.message}`);
        return 'reject';
      }
      // A block on a parent this node lacks: it is behind (or forked), so it asks the peer that
      // handed the block over. That peer validated the block before passing it on, so it holds the
      // parent; the producer may be several hops away, and sync requests reach direct peers only.
      if (error instanceof ForkChoiceError && error.behind) {
        const now = this.#clock.now();
        if (now - this.#lastNudge >= SYNC_NUDGE_MS) {
          this.#lastNudge = now;
          this.sync.requestFrom(message.peer);
        }
        return 'ignore';
      }
      throw error;
    }
  }

  async #onTransaction(message: GossipMessage): Promise<Verdict> {
    let tx: Tx;
    try {
      tx = decodeTx(message.data, this.chain.crypto.sha256);
    } catch (error) {
      if (error instanceof DecodeError) return error.verdict;
      throw error;
    }
    let effect: TxEffect;
    try {
      effect = await this.mempool.add(tx);
    } catch (error) {
      // A ledger rule's verdict: valid signatures, but not applicable to this node's tip (yet, or any more).
      if (error instanceof MempoolError || error instanceof LedgerRuleError) return error.verdict;
      throw error;
    }
    this.#streamTx(tx, effect.amount);
    return 'accept';
  }

  async #onSignal(message: GossipMessage): Promise<Verdict> {
    try {
      const signal = decodeSignal(message.data, this.chain.params.network);
      await this.#book.accept(signal);
      return 'accept';
    } catch (error) {
      if (error instanceof SignalError) return error.verdict;
      throw error;
    }
  }

  /** The machine's capacity with what the market knows: running jobs, and `docker`/`gpu` only when the engine answers with them. */
  #capacity(probe: () => Capacity): Capacity {
    const machine = probe();
    const engine = this.#market?.engine ?? { ready: false, gpus: 0 };
    const tags = machine.tags.filter((t) => t !== 'docker' && t !== 'gpu');
    if (engine.ready) tags.push('docker');
    if (engine.ready && engine.gpus > 0) tags.push('gpu');
    return { ...machine, runningJobs: this.#market?.runningJobs ?? 0, tags };
  }

  async #broadcastCapacity(probe: () => Capacity): Promise<void> {
    try {
      await this.#market?.checkEngine();
      await this.sendSignal({ to: 'broadcast', payload: new Uint8Array(0), capabilities: capacityCapabilities(this.#capacity(probe), this.mining), burnTxId: null });
    } catch (error) {
      this.#log(`atlas: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  // ---- chain events ----

  #onChain(event: ChainEvent): void {
    if (event.type !== 'connected') return;
    this.own.regossip();
    // Transactions first seen in a block (an UptimeReward is never pooled) join the stream then.
    event.block.txs.forEach((tx, i) => this.#streamTx(tx, event.effects[i]?.amount ?? 0n));
  }

  #streamTx(tx: Tx, amount: bigint): void {
    if (!STREAM_KINDS.includes(tx.body.kind)) return;
    const seen = bytesKey(tx.id);
    if (this.#streamed.has(seen)) return;
    this.#streamed.add(seen);
    // Kept even with no one listening: a client that reconnects gets what it missed.
    this.#txFeed.push(tx, amount);
  }

  // ---- helpers ----

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#sending.then(work, work);
    this.#sending = next.catch(() => {});
    return next;
  }
}
