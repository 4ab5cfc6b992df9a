/**
 * `mesh sim`: full nodes (every service of `mesh node`, on memory stores) in one process, on one
 * simulated clock, over the SimWorld's network (docs/sim.md). The same options and seed give the
 * same report, byte for byte: every chance is drawn from the seed, every signature is checked
 * synchronously on this thread (the host's native Ed25519, or noble's arithmetic), and nothing
 * reads the real clock.
 */
import { Chain } from '../chain/chain.ts';
import { buildBlock, nextSlot } from '../chain/miner.ts';
import { chooseDefaultEd25519Backend, type Ed25519Backend, nobleEd25519Backend, SigningKey } from '../crypto/ed25519.ts';
import { CREDIT } from '../encoding/amount.ts';
import { toHex } from '../encoding/hex.ts';
import { ScriptedExecutor } from '../jobs/scripted-executor.ts';
import { decodeBlock } from '../ledger/block.ts';
import { devnet } from '../ledger/params.ts';
import { TOPICS } from '../net/network.ts';
import { MeshNode } from '../node/node.ts';
import { type FullNodeServices, fullNodeServices } from '../node/services.ts';
import { MemoryStore, SharedStrings } from '../store/kv.ts';
import { Scheduler, type Turn } from '../time/scheduler.ts';
import { PrivateMiner, type PrivateMinerFigures, Spammer } from './adversaries.ts';
import { equivocationPunished, type InvariantResult, Invariants } from './invariants.ts';
import { NO_LATENCY, type RttTable, tableLatency } from './latency.ts';
import { weightedPrefix } from './prefix.ts';
import { Prng } from './prng.ts';
import { SimNetwork } from './sim-network.ts';
import { verifyOnce } from './verify-once.ts';
import { SIM_IMAGE, Workload, type WorkloadFigures } from './workload.ts';
import { MIN_PEERS, SimWorld } from './world.ts';

export type AdversaryKind = 'sybil' | 'dropper' | 'equivocator' | 'private-miner' | 'spammer';
export const ADVERSARY_KINDS: readonly AdversaryKind[] = ['sybil', 'dropper', 'equivocator', 'private-miner', 'spammer'];

export interface Partition {
  /** When it starts and how long it lasts, ms from the start. */
  readonly atMs: number;
  readonly forMs: number;
  /** The share of the nodes on the smaller side (0 to 1). */
  readonly share: number;
}

export interface SimOptions {
  readonly nodes: number;
  readonly durationMs: number;
  readonly seed: string;
  /** The PlanetLab table for `planetlab` latency; null: no latency. */
  readonly latency: RttTable | null;
  /** The share of the nodes that leave (and rejoin) per hour. */
  readonly churnPerHour: number;
  readonly partitions: readonly Partition[];
  readonly adversaries: readonly { readonly kind: AdversaryKind; readonly count: number }[];
  /** Honest nodes that produce blocks (`--mine`). */
  readonly producers: number;
  /** Connections each node dials when it starts; TARGET_PEERS when absent. */
  readonly targetPeers?: number;
  /** The share of gossip frames lost. */
  readonly loss: number;
  /** Each node's uplink, bytes per second; null: unbounded. */
  readonly uplinkBytesPerSec: number | null;
  readonly transfersPerSec: number;
  readonly messagesPerSec: number;
  readonly channelsPerSec: number;
  readonly jobsPerSec: number;
  /** Transactions each spammer sends per second. */
  readonly spamPerSec: number;
  /** How long after a heal every honest node must be on one tip. */
  readonly healBoundMs: number;
  /** The host's cheapest real task, which the scheduler's settles take between instants. */
  readonly turn?: Turn;
  /**
   * The host's Ed25519, which must finish each check on this thread before it returns (node:crypto
   * on Node); noble's arithmetic when none. Every node signs and checks with it.
   */
  readonly ed25519?: Ed25519Backend;
  /** Told every tenth of the run (and at its end) how much simulated time has passed, ms. */
  readonly onProgress?: (simulatedMs: number) => void;
}

export const DEFAULT_SIM_OPTIONS: Omit<SimOptions, 'latency' | 'turn' | 'ed25519' | 'onProgress'> = Object.freeze({
  nodes: 30,
  durationMs: 10 * 60_000,
  seed: '1',
  churnPerHour: 0,
  partitions: [],
  adversaries: [],
  producers: 5,
  loss: 0,
  uplinkBytesPerSec: 1_250_000,
  transfersPerSec: 0.5,
  messagesPerSec: 0.5,
  channelsPerSec: 0.02,
  jobsPerSec: 0.01,
  spamPerSec: 20,
  healBoundMs: 30_000,
});

/** The main network's block interval. */
const BLOCK_INTERVAL_MS = 10_000;
/** Where the simulated clock starts: a day after the devnet's genesis. */
const START_MS = Date.UTC(2026, 0, 2);
/** How often the ledger invariants are checked on every live honest node. */
const CHECK_EVERY_MS = 10_000;
/** Blocks deep a transaction counts as confirmed. */
const CONFIRMED_DEPTH = 6;
/** How long a node that leaves stays away, on average. */
const AWAY_MEAN_MS = 5 * 60_000;
/** The weight each producer earns and bonds before the run (and each equivocator: it needs weight to be heard). */
const PRODUCER_WEIGHT = 100n * CREDIT;
/** What every simulated node offers to jobs. */
const HOST = { cpuCores: 2, memMb: 2048 } as const;
/** How long an equivocation may go unpunished before the invariant counts it as broken. */
const SLASH_WITHIN_MS = 2 * 60_000;

type FullNode = MeshNode<FullNodeServices>;

interface Member {
  readonly index: number;
  readonly key: SigningKey;
  readonly honest: boolean;
  readonly mining: boolean;
  readonly relays: boolean;
  readonly equivocates: boolean;
  readonly adversary: AdversaryKind | null;
  chain: Chain;
  net: SimNetwork | null;
  node: FullNode | null;
  /** Rejoins so far, so each life draws from streams of its own. */
  lives: number;
}

interface BlockSeen {
  readonly height: number;
  readonly bornAt: number;
  /** The honest nodes alive when it was made: only they count towards its reach. */
  readonly honest: Set<number>;
  /** The time it took to reach each honest node, in the order they were reached. */
  readonly delays: number[];
  /** The honest nodes it reached (once each: a block connected again after a reorganisation counts once). */
  readonly reached: Set<number>;
}

export interface Quantiles {
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
}

export interface SimReport {
  /** The options the run took, the latency by its model's name. */
  readonly options: Omit<SimOptions, 'latency' | 'turn' | 'ed25519' | 'onProgress'> & { readonly latency: 'planetlab' | 'none' };
  readonly invariants: readonly InvariantResult[];
  readonly figures: {
    readonly blocks: number;
    readonly tipHeight: number;
    /** Per block, ms until it reached 50, 90 and 99 % of the honest nodes; each the median (and p99) over blocks. */
    readonly propagationMs: { readonly to50: Quantiles; readonly to90: Quantiles; readonly to99: Quantiles; readonly blocksShort: number };
    readonly forksPerHour: number;
    readonly orphansPerHour: number;
    /** Bytes each node sent per second, by gossip topic or protocol. */
    readonly bytesPerNodePerSec: Readonly<Record<string, number>>;
    readonly messages: WorkloadFigures<Quantiles>['messages'];
    readonly transfers: WorkloadFigures<Quantiles>['transfers'];
    readonly channels: WorkloadFigures<Quantiles>['channels'];
    readonly jobs: WorkloadFigures<Quantiles>['jobs'];
    /** Per partition, ms from its heal until every live honest node was on one tip (null: not within the run). */
    readonly healMs: readonly (number | null)[];
    /** What the private miners and spammers did, and how much of it the first live honest node's chain holds at the end. */
    readonly adversaries: {
      readonly privateMiners: PrivateMinerFigures & { readonly onFinalChain: number };
      readonly spam: { readonly sent: number; readonly included: number };
    };
    readonly churn: { readonly left: number; readonly rejoined: number; readonly failed: readonly string[] };
  };
  /** What `mesh sim report` plots. */
  readonly series: {
    /** The CDF over blocks of the ms to reach 50, 90 and 99 % of the honest nodes: the 0th to 100th percentiles. */
    readonly propagationCdfMs: { readonly to50: readonly number[]; readonly to90: readonly number[]; readonly to99: readonly number[] };
    /** Per simulated minute: blocks made, and those of them orphaned. */
    readonly blocksPerMinute: readonly number[];
    readonly orphansPerMinute: readonly number[];
  };
}

/** The 0th to 100th percentiles of `values` (none: empty). */
function percentiles(values: readonly number[]): number[] {
  if (values.length === 0) return [];
  const sorted = [...values].sort((a, b) => a - b);
  return Array.from({ length: 101 }, (_, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
}

export function quantiles(values: readonly number[]): Quantiles {
  if (values.length === 0) return { p50: null, p90: null, p99: null };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}

const round = (value: number, digits = 1): number => Math.round(value * 10 ** digits) / 10 ** digits;

/** Runs one simulation to its end and reports what happened. */
export async function runSim(options: SimOptions): Promise<SimReport> {
  const { latency: _table, turn: _turn, ed25519: _ed25519, onProgress, ...settings } = options;
  // Keys made below sign with it too (the default backend's signer is the chosen one's).
  chooseDefaultEd25519Backend(verifyOnce(options.ed25519 ?? nobleEd25519Backend));
  const root = new Prng(`mesh-sim/${options.seed}`);
  const clock = new Scheduler(START_MS, options.turn ? { turn: options.turn } : {});
  const start = clock.now();
  const since = (): number => clock.now() - start;
  const latency = options.latency === null ? NO_LATENCY : tableLatency(options.latency, options.nodes + adversaryCount(options), root.fork('placement'));
  const world = new SimWorld<SimNetwork>({ clock, latency, rng: root.fork('world'), loss: options.loss, uplinkBytesPerSec: options.uplinkBytesPerSec });
  const params = devnet(BLOCK_INTERVAL_MS);
  const invariants = new Invariants(options.seed);
  const nets: SimNetwork[] = [];
  const blocks = new Map<string, BlockSeen>();
  const watched = new WeakSet<Chain>();
  const inPrefix = new Set<string>();
  const members: Member[] = [];
  // The nodes' chains hold the same blocks and entries: one copy of each (kv.ts).
  const shared = new SharedStrings();
  const topology = root.fork('topology');

  const honestAlive = (): Member[] => members.filter((m) => m.honest && m.node !== null);

  // The first time each node's chain connects a block: when it reached that node.
  // A block reaches a node when the node first has it: accepted from gossip (on its main chain or
  // a side one), or connected to its chain by sync or by its own producer, whichever comes first.
  const reach = (member: Member, hash: Uint8Array, height: number): void => {
    if (!member.honest) return;
    const key = toHex(hash);
    // The prefix every node starts from is no block of the run (a node that lost its data syncs it again).
    if (inPrefix.has(key)) return;
    const seen = blocks.get(key);
    if (seen === undefined) {
      const honest = new Set(honestAlive().map((m) => m.index));
      blocks.set(key, { height, bornAt: clock.now(), honest, delays: [0], reached: new Set([member.index]) });
    } else if (seen.honest.has(member.index) && !seen.reached.has(member.index)) {
      seen.reached.add(member.index);
      seen.delays.push(clock.now() - seen.bornAt);
    }
  };
  const watch = (member: Member): void => {
    if (watched.has(member.chain)) return;
    watched.add(member.chain);
    member.chain.subscribe((event) => {
      if (event.type === 'connected') reach(member, event.block.hash, event.block.header.height);
    });
  };
  // Every node is handed the same bytes of a gossiped block: decoded once.
  const gossiped = new WeakMap<Uint8Array, { hash: Uint8Array; height: number } | null>();
  const accepted = (member: Member, topic: string, data: Uint8Array): void => {
    if (topic !== TOPICS.blocks) return;
    let block = gossiped.get(data);
    if (block === undefined) {
      try {
        const decoded = decodeBlock(params.network, data);
        block = { hash: decoded.hash, height: decoded.header.height };
      } catch {
        block = null;
      }
      gossiped.set(data, block);
    }
    if (block !== null) reach(member, block.hash, block.height);
  };

  const startMember = async (member: Member): Promise<void> => {
    const life = `${member.index}/${member.lives}`;
    const net = new SimNetwork(world, member.key.publicKey, member.index, root.fork(`net/${life}`));
    net.relays = member.relays;
    net.onAccepted = (topic, data) => accepted(member, topic, data);
    nets.push(net);
    world.attach(net);
    member.net = net;
    watch(member);
    const node = await MeshNode.create({
      chain: member.chain,
      network: net,
      key: member.key,
      clock,
      random: root.fork(`node/${life}`),
      services: fullNodeServices({
        mine: member.mining,
        capacity: () => ({ ...HOST, runningJobs: 0, tags: ['linux'] }),
        jobs: { executor: new ScriptedExecutor(clock), policy: { allowImages: [SIM_IMAGE], ...HOST } },
      }),
    });
    await node.start();
    member.node = node;
    world.fillPeers(net, topology, options.targetPeers);
  };

  const stopMember = async (member: Member): Promise<void> => {
    const { node, net } = member;
    member.node = null;
    member.net = null;
    if (net) {
      net.close();
      world.detach(net);
    }
    await node?.stop();
  };

  // The nodes: honest producers first, then the other honest nodes, then the adversaries.
  const kinds: { honest: boolean; mining: boolean; relays: boolean; equivocates: boolean; adversary: AdversaryKind | null }[] = [];
  for (let i = 0; i < options.nodes; i++) kinds.push({ honest: true, mining: i < options.producers, relays: true, equivocates: false, adversary: null });
  for (const { kind, count } of options.adversaries) {
    for (let i = 0; i < count; i++)
      kinds.push({ honest: false, mining: kind === 'sybil', relays: kind !== 'dropper', equivocates: kind === 'equivocator', adversary: kind });
  }
  const keys = kinds.map((_, index) => SigningKey.fromSeed(root.fork(`key/${index}`).bytes(32)));
  // Equivocators and private miners need weight to be heard, earned in the prefix as the producers' is.
  const weighted = keys.filter((_, i) => (kinds[i]!.honest && kinds[i]!.mining) || kinds[i]!.equivocates || kinds[i]!.adversary === 'private-miner');
  const bootstrap = SigningKey.fromSeed(root.fork('key/bootstrap').bytes(32));
  const prefix = await weightedPrefix(params, bootstrap, weighted, PRODUCER_WEIGHT);
  for (const block of prefix) inPrefix.add(toHex(block.hash));
  for (const [index, kind] of kinds.entries()) {
    const chain = await Chain.open({ store: new MemoryStore({ shared }), params });
    await chain.addBranch(prefix);
    members.push({ index, key: keys[index]!, ...kind, chain, net: null, node: null, lives: 0 });
  }
  for (const member of members) await startMember(member);

  // Equivocators sign two blocks at each of their slots and gossip both.
  const equivocations: { producer: Uint8Array; height: number; atMs: number; judged: boolean }[] = [];
  const equivocate = async (member: Member): Promise<void> => {
    const { chain, net, key } = member;
    if (net === null || member.node === null) return;
    const now = clock.now();
    const slot = nextSlot(chain, key.publicKey);
    const height = chain.tip.height + 1;
    if (!(slot <= now) || equivocations.some((e) => e.height === height && e.producer === key.publicKey)) return;
    const one = await buildBlock(chain, null, key, now);
    const two = await buildBlock(chain, null, key, now + 1);
    equivocations.push({ producer: key.publicKey, height, atMs: since(), judged: false });
    await chain.addBlock(one, now);
    await net.publish(TOPICS.blocks, one.bytes);
    await net.publish(TOPICS.blocks, two.bytes);
  };
  // Private miners mine a branch of their own and release it to win races; spammers fill the pools.
  const privateMiners: PrivateMiner[] = [];
  for (const m of members.filter((m) => m.adversary === 'private-miner')) privateMiners.push(await PrivateMiner.create(clock, m, params, prefix));
  if (privateMiners.length > 0) clock.setInterval(() => privateMiners.forEach((p) => void p.tick().catch(() => {})), 500);
  const spammers = members.filter((m) => m.adversary === 'spammer').map((m) => new Spammer(m, root.fork(`spam/${m.index}`), params.network));
  if (spammers.length > 0 && options.spamPerSec > 0)
    clock.setInterval(() => spammers.forEach((sp) => void sp.send().catch(() => {})), 1_000 / options.spamPerSec);

  const equivocators = members.filter((m) => m.equivocates);
  if (equivocators.length > 0) {
    clock.setInterval(() => {
      for (const m of equivocators) void equivocate(m).catch(() => {});
    }, 500);
  }

  // Connections: every second, a node under MIN_PEERS dials more (libp2p's connection manager).
  clock.setInterval(() => {
    for (const net of world.nodes) if (net && net.links.size < MIN_PEERS) world.fillPeers(net, topology, options.targetPeers);
  }, 1_000);

  // From a partition until its halves agree again, no block counts as confirmed: each half
  // confirms blocks that the heal may take back, as on any longest chain (docs/sim.md, "Invariants").
  let parted = false;
  const confirmer = (): Member | undefined => (parted ? undefined : honestAlive()[0]);
  // The ledger invariants on every live honest node; confirmed blocks on the confirmer.
  const confirmed = new Map<number, { hash: string; txs: Uint8Array[]; jobs: string[] }>();
  const settled = new Set<string>();
  const capacities = new Map<string, bigint>();
  const checkLedger = async (): Promise<void> => {
    for (const m of honestAlive()) invariants.checkState(m.chain, since());
    const reference = confirmer();
    if (reference === undefined) return;
    const chain = reference.chain;
    for (const e of equivocations) {
      if (e.judged || since() - e.atMs < SLASH_WITHIN_MS) continue;
      e.judged = true;
      const others = equivocations.filter((o) => o !== e && o.producer === e.producer).map((o) => o.height);
      invariants.record(
        'no-equivocation-unslashed',
        since(),
        equivocationPunished(chain.state, chain.tip.height, e.producer, e.height, others),
        () => `${toHex(e.producer)} signed two blocks at height ${e.height} and is not slashed`,
      );
    }
    for (const [height, kept] of confirmed) {
      if (height > chain.tip.height) continue;
      const hash = await chain.hashAt(height);
      if (hash !== undefined && toHex(hash) === kept.hash) {
        invariants.record('no-confirmed-tx-lost', since(), true, () => '');
        continue;
      }
      for (const id of kept.txs) {
        const found = await chain.txHeight(id);
        invariants.record('no-confirmed-tx-lost', since(), found !== undefined, () => `tx ${toHex(id)} of the block confirmed at height ${height} is gone`);
      }
      // Its settlements left the chain with it: one settling a job again is not a second one.
      for (const job of kept.jobs) settled.delete(job);
      confirmed.delete(height);
    }
    for (let h = chain.tip.height - CONFIRMED_DEPTH; h >= 1 && !confirmed.has(h); h--) {
      const block = await chain.blockAt(h);
      if (block === undefined) break;
      const jobs: string[] = [];
      confirmed.set(h, { hash: toHex(block.hash), txs: block.txs.map((tx) => tx.id), jobs });
      for (const tx of block.txs) {
        const body = tx.body;
        if (body.kind === 'JobSettle') {
          const job = toHex(body.job_id);
          invariants.record('no-job-settled-twice', since(), !settled.has(job), () => `job ${job} settled again at height ${h}`);
          settled.add(job);
          jobs.push(job);
        } else if (body.kind === 'ChannelOpen') capacities.set(toHex(tx.id), body.capacity);
        else if (body.kind === 'ChannelClose') {
          const capacity = capacities.get(toHex(body.channel_id));
          if (capacity === undefined) continue;
          invariants.record(
            'no-channel-paid-beyond-capacity',
            since(),
            body.cumulative <= capacity,
            () => `channel ${toHex(body.channel_id)} closed at ${body.cumulative} of ${capacity}`,
          );
        }
      }
    }
  };
  clock.setInterval(() => void checkLedger(), CHECK_EVERY_MS);

  // Partitions and heals, and the time until the honest nodes agree again.
  const healMs: (number | null)[] = [];
  for (const [i, partition] of options.partitions.entries()) {
    healMs.push(null);
    clock.setTimeout(() => {
      const sides = new Int8Array(members.length);
      const order = root.fork(`partition/${i}`).sample(members, members.length);
      const minority = Math.round(partition.share * members.length);
      for (const [rank, m] of order.entries()) sides[m.index] = rank < minority ? 1 : 0;
      world.partition(sides);
      parted = true;
    }, partition.atMs);
    const healAt = partition.atMs + partition.forMs;
    clock.setTimeout(() => {
      world.heal();
      const check = clock.setInterval(() => {
        const tips = new Set(honestAlive().map((m) => toHex(m.chain.tip.hash)));
        const waited = since() - healAt;
        if (tips.size <= 1 && healMs[i] === null) {
          healMs[i] = waited;
          parted = false;
        }
        if (waited >= options.healBoundMs) {
          parted = false;
          invariants.record('one-tip-after-heal', since(), healMs[i] !== null, () => `${tips.size} tips among the honest nodes ${waited} ms after the heal`);
          check.cancel();
        }
      }, 100);
    }, healAt);
  }

  // Churn: honest nodes that do not produce leave at random, and come back after a while, half
  // of them with their data and half starting afresh.
  const churnRng = root.fork('churn');
  const churn = { left: 0, rejoined: 0, failed: [] as string[] };
  if (options.churnPerHour > 0) {
    const meanGapMs = 3_600_000 / (options.churnPerHour * options.nodes);
    const leaveNext = (): void => {
      clock.setTimeout(
        () => {
          const candidates = members.filter((m) => m.honest && !m.mining && m.node !== null && m.index !== 0);
          const member = candidates.length > 0 ? candidates[churnRng.int(candidates.length)]! : undefined;
          if (member !== undefined) {
            churn.left++;
            const keepData = churnRng.chance(0.5);
            void stopMember(member).then(() => {
              clock.setTimeout(
                () => {
                  void (async () => {
                    member.lives++;
                    if (!keepData) member.chain = await Chain.open({ store: new MemoryStore({ shared }), params });
                    await startMember(member);
                    churn.rejoined++;
                  })().catch((error: unknown) => churn.failed.push(`node ${member.index} could not rejoin: ${String(error)}`));
                },
                Math.ceil(churnRng.exponential(AWAY_MEAN_MS)),
              );
            });
          }
          leaveNext();
        },
        Math.ceil(churnRng.exponential(meanGapMs)),
      );
    };
    leaveNext();
  }

  // The workload.
  const byHex = new Map(members.map((m) => [toHex(m.key.publicKey), m]));
  const workload = new Workload(clock, root.fork('workload'), honestAlive, (hex) => {
    const m = byHex.get(hex);
    return m?.honest ? m : undefined;
  });
  workload.start(options);

  if (onProgress === undefined) await clock.advance(options.durationMs);
  else {
    const step = Math.max(1, Math.ceil(options.durationMs / 10));
    let at = 0;
    do {
      at = Math.min(at + step, options.durationMs);
      await clock.advance(at - since());
      onProgress(since());
    } while (at < options.durationMs);
  }
  await checkLedger();
  const end = since();
  const reference = honestAlive()[0]!;

  // Blocks that did not end on the reference chain are orphans; a height with one is a fork.
  let orphans = 0;
  const forkHeights = new Set<number>();
  const minutes = Math.ceil(options.durationMs / 60_000);
  const blocksPerMinute = new Array<number>(minutes).fill(0);
  const orphansPerMinute = new Array<number>(minutes).fill(0);
  for (const [hash, seen] of blocks) {
    const minute = Math.min(minutes - 1, Math.floor((seen.bornAt - start) / 60_000));
    blocksPerMinute[minute]!++;
    const canonical = await reference.chain.hashAt(seen.height);
    if (canonical !== undefined && toHex(canonical) === hash) continue;
    if (seen.height > reference.chain.tip.height) continue;
    orphans++;
    orphansPerMinute[minute]!++;
    forkHeights.add(seen.height);
  }
  const spread = (share: number): { within: number[]; short: number } => {
    const within: number[] = [];
    let short = 0;
    for (const seen of blocks.values()) {
      if (seen.bornAt - start > end - 60_000) continue; // too young to have spread
      const need = Math.max(1, Math.ceil(share * seen.honest.size));
      if (seen.delays.length >= need) within.push(seen.delays[need - 1]!);
      else short++;
    }
    return { within, short };
  };
  const to50 = spread(0.5);
  const to90 = spread(0.9);
  const to99 = spread(0.99);

  const bytes = new Map<string, number>();
  for (const net of nets) for (const [kind, n] of net.sent) bytes.set(kind, (bytes.get(kind) ?? 0) + n);
  const perNodeSec = members.length * (options.durationMs / 1000);
  const bytesPerNodePerSec = Object.fromEntries([...bytes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, n]) => [kind, round(n / perNodeSec)]));

  // What of the adversaries' blocks and transactions the final chain holds.
  const minerKeys = new Set(members.filter((m) => m.adversary === 'private-miner').map((m) => toHex(m.key.publicKey)));
  const spamKeys = new Set(spammers.flatMap((sp) => [...sp.senders]));
  let privateOnFinal = 0;
  let spamIncluded = 0;
  const first = prefix.length + 1;
  if (reference.chain.tip.height >= first) {
    for (const block of await reference.chain.blocksFrom(first, reference.chain.tip.height - first + 1)) {
      if (minerKeys.has(toHex(block.header.producer))) privateOnFinal++;
      for (const tx of block.txs) if (spamKeys.has(toHex(tx.body.sender))) spamIncluded++;
    }
  }
  const minerFigures = privateMiners.map((p) => p.figures);
  const sum = (pick: (f: PrivateMinerFigures) => number): number => minerFigures.reduce((total, f) => total + pick(f), 0);

  for (const m of members) if (m.node) await stopMember(m);
  const hours = options.durationMs / 3_600_000;
  return {
    options: { ...settings, latency: options.latency === null ? 'none' : 'planetlab' },
    invariants: invariants.results(),
    figures: {
      blocks: blocks.size,
      tipHeight: reference.chain.tip.height,
      propagationMs: { to50: quantiles(to50.within), to90: quantiles(to90.within), to99: quantiles(to99.within), blocksShort: to99.short },
      forksPerHour: round(forkHeights.size / hours),
      orphansPerHour: round(orphans / hours),
      bytesPerNodePerSec,
      ...workload.report(quantiles),
      healMs,
      adversaries: {
        privateMiners: { mined: sum((f) => f.mined), released: sum((f) => f.released), releases: sum((f) => f.releases), onFinalChain: privateOnFinal },
        spam: { sent: spammers.reduce((total, sp) => total + sp.sent, 0), included: spamIncluded },
      },
      churn,
    },
    series: {
      propagationCdfMs: { to50: percentiles(to50.within), to90: percentiles(to90.within), to99: percentiles(to99.within) },
      blocksPerMinute,
      orphansPerMinute,
    },
  };
}

function adversaryCount(options: SimOptions): number {
  return options.adversaries.reduce((sum, a) => sum + a.count, 0);
}
