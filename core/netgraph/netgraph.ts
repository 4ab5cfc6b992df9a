/**
 * The network graph a node holds (node-messaging.md §3; docs/netgraph.md): its own network
 * coordinate, kept by Vivaldi from each ping's round trip; the coordinates other nodes gossip; and
 * link samples, RTT, jitter and loss of one link signed by both of its ends and gossiped, so that
 * any node can check what two others measured between them.
 *
 * It rides on the node's pings (core/netgraph/peer-pings.ts): it hears every outcome, a round trip or a
 * failure, and takes a link's figures (median RTT, jitter, loss) from the pings' own window of the
 * peer, the one GET /peers shows, so the two never disagree. Of each link, the end with the smaller
 * NodeId proposes a sample every `sampleEveryMs`, the other checks it against its own pings and
 * countersigns it over the `netgraph.countersign` RPC, and the proposer gossips it on
 * `mesh-netgraph`. Every node gossips its own coordinate there too, every `coordinateEveryMs`.
 *
 * What floods the whole mesh is bounded (docs/scale.md). A coordinate goes from its node to the
 * node's peers every period, which is what Vivaldi needs of them; it is relayed past them only once
 * per paced period (core/net/broadcast-pace.ts), which is what the rest of the mesh needs for its
 * predictions. A link sample is proposed once per paced period. And each node passes on at most
 * its relay budget of each (RelayBudget), however many arrive.
 */
import { WindowedMin } from '../collections/windowed-min.ts';
import { type SigningKey, verify } from '../crypto/ed25519.ts';
import type { Random } from '../crypto/random.ts';
import { bytesEqual, compareBytes } from '../encoding/bytes.ts';
import { decode, encode, struct, uint53, variant } from '../encoding/codec.ts';
import { toHex } from '../encoding/hex.ts';
import { DecodeError } from '../errors.ts';
import { pacedPeriodMs, RelayBudget } from '../net/broadcast-pace.ts';
import { type GossipMessage, type Network, type RpcRequest, TOPICS, type Verdict } from '../net/network.ts';
import type { Clock, Timer } from '../time/clock.ts';
import { NewestBook } from './book.ts';
import { CoordinateError, LinkSampleError } from './errors.ts';
import {
  checkLinkSample,
  FUTURE_SLACK_MS,
  type LinkSample,
  linkKey,
  linkSigningBytes,
  proposalCodec,
  SAMPLE_MAX_AGE_MS,
  type SignedLinkSample,
  signedLinkSampleCodec,
  signLinkSample,
  verifyLinkSample,
} from './link-sample.ts';
import type { PingFigures, PingOutcome, PingWindows } from './peer-pings.ts';
import { type MeshStats, meshStats } from './stats.ts';
import { type Coordinate, checkCoordinate, coordinateCodec, estimateRttMs, VivaldiClient } from './vivaldi.ts';

/** The RPC protocol over which a link's other end countersigns a sample. */
export const COUNTERSIGN_PROTOCOL = 'netgraph.countersign';

/** What goes on the netgraph topic: a node's own coordinate, or a link sample signed by both ends. */
export const netgraphMessageCodec = variant(
  'kind',
  {
    coordinate: [1, struct({ coordinate: coordinateCodec, issued_at: uint53 })],
    link: [2, signedLinkSampleCodec],
  },
  'netgraph-message',
);

export interface NetgraphLimits {
  /** Successful pings a link needs before its sample is proposed (default 3). */
  readonly minSamples: number;
  /** Time between two samples of one link (default 60 s), stretched past PACE_NODES links known (broadcast-pace.ts). */
  readonly sampleEveryMs: number;
  /** Time between two gossips of the node's own coordinate to its peers (default 30 s); relayed past them once per paced period. */
  readonly coordinateEveryMs: number;
  /** Links the book holds (default 1,024): past it, the oldest sample goes. */
  readonly maxLinks: number;
  /** Coordinates of other nodes the book holds (default 1,024). */
  readonly maxCoordinates: number;
  /** A sample or coordinate older than this is dropped (default 10 min; at least three of its paced periods). */
  readonly maxAgeMs: number;
}

export const DEFAULT_NETGRAPH_LIMITS: NetgraphLimits = Object.freeze({
  minSamples: 3,
  sampleEveryMs: 60_000,
  coordinateEveryMs: 30_000,
  maxLinks: 1_024,
  maxCoordinates: 1_024,
  maxAgeMs: SAMPLE_MAX_AGE_MS,
});

/** The netgraph's limits for a ping interval: a sample every 6 rounds, a coordinate every 3. */
export function netgraphLimitsFor(pingIntervalMs: number, overrides: Partial<NetgraphLimits> = {}): NetgraphLimits {
  return { ...DEFAULT_NETGRAPH_LIMITS, sampleEveryMs: 6 * pingIntervalMs, coordinateEveryMs: 3 * pingIntervalMs, ...overrides };
}

/**
 * How far the countersigner's own median RTT `mine` may be from the proposed `rtt`: within a factor
 * of two either way, with 10 ms of slack (loopback and LAN RTTs are a millisecond or less, and vary
 * by more than their size).
 */
export function plausibleRtt(rtt: number, mine: number): boolean {
  return rtt <= 2 * mine + 10 && rtt >= mine / 2 - 10;
}

export interface CoordinateView {
  vec: number[];
  height: number;
  error: number;
  adjustment: number;
}

/** One link sample as GET /netgraph shows it (signatures in hex). */
export interface LinkView {
  a: string;
  b: string;
  rtt_ms: number;
  jitter_ms: number;
  loss: number;
  /** ms since the epoch. */
  measured_at: number;
  sig_a: string;
  sig_b: string;
}

export interface NetgraphView {
  node_id: string;
  coordinate: CoordinateView;
  /** The coordinate's error estimate (as in `coordinate`): 1.5 knows nothing, toward 0 sure. */
  error: number;
  links: LinkView[];
  coordinates: { node_id: string; coordinate: CoordinateView; updated_at: number }[];
  mesh: MeshStats;
}

export type RttAnswer =
  | { to: string; rtt_ms: number; source: 'measured'; jitter_ms: number; loss: number; measured_at: number; samples: number }
  | { to: string; rtt_ms: number; source: 'predicted'; error: number; updated_at: number };

/** A link in the book: its newest sample, and the least rtt_ms of its samples over the book's expiry (what regions are judged on). */
interface HeldLink {
  readonly signed: SignedLinkSample;
  readonly least: WindowedMin;
}

/** Where this node is with proposing samples of its link to one peer. */
interface Proposals {
  lastProposal: number;
  proposing: boolean;
}

export interface NetGraphInit {
  readonly network: Network;
  /** The node's pings: their outcomes drive the coordinate and the proposals, their windows give the link figures. */
  readonly pings: PingWindows;
  readonly key: SigningKey;
  /** The chain's network name, signed into every sample. */
  readonly networkName: string;
  readonly clock: Clock;
  readonly random: Random;
  /** Nodes known from elsewhere (the atlas), hex: the share reachable counts them. */
  readonly knownNodes?: () => readonly string[];
  readonly limits?: Partial<NetgraphLimits>;
  readonly log?: (line: string) => void;
}

function viewOf(c: Coordinate): CoordinateView {
  return { vec: [...c.vec], height: c.height, error: c.error, adjustment: c.adjustment };
}

export class NetGraph {
  readonly limits: NetgraphLimits;
  readonly vivaldi: VivaldiClient;
  readonly #network: Network;
  readonly #pings: PingWindows;
  readonly #key: SigningKey;
  readonly #self: string;
  readonly #networkName: string;
  readonly #clock: Clock;
  readonly #knownNodes: () => readonly string[];
  readonly #log: (line: string) => void;
  readonly #proposals = new Map<string, Proposals>();
  readonly #links: NewestBook<HeldLink>;
  readonly #coordinates: NewestBook<Coordinate>;
  /** Of each node, the issued_at of the last coordinate this node relayed. */
  readonly #relayedAt = new Map<string, number>();
  readonly #coordinateRelays: RelayBudget;
  readonly #linkRelays: RelayBudget;
  #timer: Timer | null = null;
  #stopServing: (() => void) | null = null;
  #stopListening: (() => void) | null = null;
  #stopped = false;

  constructor(init: NetGraphInit) {
    this.limits = { ...DEFAULT_NETGRAPH_LIMITS, ...init.limits };
    this.#network = init.network;
    this.#pings = init.pings;
    this.#key = init.key;
    this.#self = toHex(init.key.publicKey);
    this.#networkName = init.networkName;
    this.#clock = init.clock;
    this.#knownNodes = init.knownNodes ?? (() => []);
    this.#log = init.log ?? (() => {});
    this.vivaldi = new VivaldiClient({ random: init.random });
    this.#links = new NewestBook(this.limits.maxLinks, this.limits.maxAgeMs);
    this.#coordinates = new NewestBook(this.limits.maxCoordinates, this.limits.maxAgeMs);
    this.#coordinateRelays = new RelayBudget(this.#clock, this.limits.coordinateEveryMs);
    this.#linkRelays = new RelayBudget(this.#clock, this.limits.sampleEveryMs);
  }

  /** This node's id (hex). */
  get nodeId(): string {
    return this.#self;
  }

  start(): void {
    this.#stopped = false;
    this.#network.handle(TOPICS.netgraph, (m) => this.#onMessage(m));
    this.#stopServing = this.#network.serve(COUNTERSIGN_PROTOCOL, (r) => this.#countersign(r), { maxRequestBytes: 1024, maxResponseBytes: 1024 });
    this.#timer = this.#clock.setInterval(() => void this.#gossipCoordinate(), this.limits.coordinateEveryMs);
    this.#stopListening = this.#pings.onOutcome((peer, rttMs) => this.#onPing(peer, rttMs));
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = null;
    this.#stopServing?.();
    this.#stopServing = null;
    this.#stopListening?.();
    this.#stopListening = null;
    this.#network.unsubscribe(TOPICS.netgraph);
  }

  /** The nodes of the mesh as this node knows them: those whose coordinates it holds, and itself. */
  #nodes(): number {
    return this.#coordinates.size + 1;
  }

  /**
   * Time between two samples of one link, paced on the links of the mesh rather than its nodes:
   * each sample floods to every node, and there are half as many links as nodes times their peers
   * (this node's count of peers standing for everyone's: the link book is capped, so its size is not).
   */
  #sampleEveryMs(): number {
    return pacedPeriodMs(this.limits.sampleEveryMs, Math.ceil((this.#nodes() * Math.max(1, this.#network.peers().length)) / 2));
  }

  // A record is kept for three of its paced periods at least: a slower pace must not empty the books.
  #holdBooks(): void {
    const nodes = this.#nodes();
    this.#coordinates.maxAgeMs = Math.max(this.limits.maxAgeMs, 3 * pacedPeriodMs(this.limits.coordinateEveryMs, nodes));
    this.#links.maxAgeMs = Math.max(this.limits.maxAgeMs, 3 * this.#sampleEveryMs());
  }

  /** A ping's outcome, already in the pings' window: a round trip in ms, or null for a ping that failed. */
  #onPing(peer: Uint8Array, rttMs: PingOutcome): void {
    if (rttMs === null) return;
    const key = toHex(peer);
    const theirs = this.#coordinates.get(key, this.#clock.now());
    if (theirs !== undefined) {
      try {
        this.vivaldi.observe(key, theirs.value, rttMs);
      } catch (error) {
        if (!(error instanceof CoordinateError)) throw error;
        this.#log(`netgraph: ${error.message}`);
      }
    }
    if (compareBytes(this.#key.publicKey, peer) < 0) void this.#propose(peer, key);
  }

  /** Forgets the proposal state of peers no longer connected, and the relays of nodes no longer held (kept bounded by the peers and the book). */
  #prune(): void {
    const connected = new Set(this.#network.peers().map((p) => toHex(p.node)));
    for (const key of this.#proposals.keys()) if (!connected.has(key)) this.#proposals.delete(key);
    const now = this.#clock.now();
    for (const key of this.#relayedAt.keys()) if (this.#coordinates.get(key, now) === undefined) this.#relayedAt.delete(key);
  }

  /**
   * Whether a coordinate just kept goes on past this node. One from its own node (a peer's) goes on
   * once per paced period; one relayed to this node, at half that, so that a relay that holds the
   * mesh a little smaller than this node does is not cut short. Both less half a base period, as a
   * node's timer is not exact to the ms, and both within the relay budget.
   */
  #relaysCoordinate(origin: string, issuedAt: number, direct: boolean, from: string): boolean {
    const base = this.limits.coordinateEveryMs;
    const period = pacedPeriodMs(base, this.#nodes());
    if (issuedAt - (this.#relayedAt.get(origin) ?? -Infinity) < (direct ? period : period / 2) - base / 2) return false;
    if (!this.#coordinateRelays.take(from)) return false;
    this.#relayedAt.set(origin, issuedAt);
    return true;
  }

  /** This node's figures of its link to `peer`, from the pings' window; null before any round trip in it. */
  #figures(peer: Uint8Array): (PingFigures & { readonly medianMs: number }) | null {
    const figures = this.#pings.figures(peer);
    return figures.medianMs === null ? null : { ...figures, medianMs: figures.medianMs };
  }

  async #propose(peer: Uint8Array, key: string): Promise<void> {
    const now = this.#clock.now();
    const figures = this.#figures(peer);
    const proposals = this.#proposals.get(key) ?? { lastProposal: -Infinity, proposing: false };
    this.#proposals.set(key, proposals);
    if (proposals.proposing || figures === null || figures.samplesMs.length < this.limits.minSamples || now - proposals.lastProposal < this.#sampleEveryMs())
      return;
    proposals.proposing = true;
    proposals.lastProposal = now;
    try {
      const sample: LinkSample = {
        a: this.#key.publicKey,
        b: peer,
        rtt_ms: figures.medianMs,
        jitter_ms: figures.jitterMs,
        loss: figures.loss,
        measured_at: now,
      };
      const sig_a = await signLinkSample(sample, this.#key, this.#networkName);
      const sig_b = await this.#network.request(peer, COUNTERSIGN_PROTOCOL, encode(proposalCodec, { ...sample, sig: sig_a }), {
        timeoutMs: 5_000,
        maxResponseBytes: 64,
      });
      const signed = await verifyLinkSample({ sample, sig_a, sig_b }, this.#networkName, this.#clock.now());
      if (this.#stopped) return;
      this.#keep(signed, this.#clock.now());
      await this.#network.publish(TOPICS.netgraph, encode(netgraphMessageCodec, { kind: 'link', ...sample, sig_a, sig_b: signed.sig_b }));
    } catch (error) {
      if (!this.#stopped) this.#log(`netgraph: link sample with ${toHex(peer).slice(0, 16)}…: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      proposals.proposing = false;
    }
  }

  /** The other end of a link: checks a proposed sample against its own pings, and signs it. */
  async #countersign(request: RpcRequest): Promise<Uint8Array> {
    let proposal;
    try {
      proposal = decode(proposalCodec, request.data);
    } catch (error) {
      if (error instanceof DecodeError) this.#network.penalise(request.peer, 'a link sample proposal that does not decode');
      throw error;
    }
    const { sig, ...sample } = proposal;
    if (!bytesEqual(sample.a, request.peer) || !bytesEqual(sample.b, this.#key.publicKey)) {
      this.#network.penalise(request.peer, 'a link sample proposal it is not a and this node b of');
      throw new LinkSampleError('not-a-party', 'the proposer is a, and this node b, of a sample it countersigns');
    }
    try {
      checkLinkSample(sample, this.#clock.now());
    } catch (error) {
      this.#network.penalise(request.peer, 'a link sample proposal out of range');
      throw error;
    }
    if (Math.abs(sample.measured_at - this.#clock.now()) > FUTURE_SLACK_MS)
      throw new LinkSampleError('bad-time', 'a proposed sample is measured within the last 30 s');
    if (!(await verify(sample.a, linkSigningBytes(sample, this.#networkName), sig))) {
      this.#network.penalise(request.peer, 'a link sample proposal with a bad signature');
      throw new LinkSampleError('bad-signature', "the proposer's signature does not verify");
    }
    const mine = this.#figures(request.peer);
    if (mine === null) throw new LinkSampleError('implausible', 'this node has not measured the link yet');
    if (!plausibleRtt(sample.rtt_ms, mine.medianMs))
      throw new LinkSampleError('implausible', `rtt_ms ${sample.rtt_ms} is far from this node's own ${mine.medianMs}`);
    return signLinkSample(sample, this.#key, this.#networkName);
  }

  /** Keeps a checked sample if it is the newest of its link, and counts its RTT in the link's least; says whether it did. */
  #keep(signed: SignedLinkSample, now: number): boolean {
    const { a, b, rtt_ms, measured_at } = signed.sample;
    const key = linkKey(a, b);
    const least = this.#links.get(key, now)?.value.least ?? new WindowedMin(this.limits.maxAgeMs);
    if (!this.#links.put(key, { signed, least }, measured_at, now)) return false;
    least.add(rtt_ms, measured_at);
    return true;
  }

  async #gossipCoordinate(): Promise<void> {
    this.#prune();
    this.#holdBooks();
    const message = encode(netgraphMessageCodec, {
      kind: 'coordinate',
      coordinate: { ...this.vivaldi.coordinate, vec: [...this.vivaldi.coordinate.vec] },
      issued_at: this.#clock.now(),
    });
    await this.#network.publish(TOPICS.netgraph, message).catch((e: unknown) => this.#log(`netgraph: gossip: ${String(e)}`));
  }

  async #onMessage(message: GossipMessage): Promise<Verdict> {
    const now = this.#clock.now();
    try {
      const decoded = decode(netgraphMessageCodec, message.data);
      if (decoded.kind === 'coordinate') {
        const origin = toHex(message.origin);
        if (origin === this.#self) return 'ignore';
        const coordinate = checkCoordinate(decoded.coordinate, this.vivaldi.config.dimensionality);
        if (decoded.issued_at > now + FUTURE_SLACK_MS) return 'reject';
        if (!this.#coordinates.put(origin, coordinate, decoded.issued_at, now)) return 'ignore';
        return this.#relaysCoordinate(origin, decoded.issued_at, bytesEqual(message.peer, message.origin), toHex(message.peer)) ? 'accept' : 'ignore';
      }
      const { a, b, rtt_ms, jitter_ms, loss, measured_at, sig_a, sig_b } = decoded;
      const signed = await verifyLinkSample({ sample: { a, b, rtt_ms, jitter_ms, loss, measured_at }, sig_a, sig_b }, this.#networkName, now);
      return this.#keep(signed, now) && this.#linkRelays.take(toHex(message.peer)) ? 'accept' : 'ignore';
    } catch (error) {
      if (error instanceof DecodeError || error instanceof CoordinateError || error instanceof LinkSampleError) {
        this.#log(`netgraph: refused from ${toHex(message.peer).slice(0, 16)}…: ${error.message}`);
        return error.verdict ?? 'reject';
      }
      throw error;
    }
  }

  // ---- what the routes read ----

  /** GET /netgraph. */
  view(): NetgraphView {
    const now = this.#clock.now();
    const own = this.vivaldi.coordinate;
    return {
      node_id: this.#self,
      coordinate: viewOf(own),
      error: own.error,
      links: this.#links.list(now).map(
        ([
          ,
          {
            value: {
              signed: { sample, sig_a, sig_b },
            },
          },
        ]) => ({
          a: toHex(sample.a),
          b: toHex(sample.b),
          rtt_ms: sample.rtt_ms,
          jitter_ms: sample.jitter_ms,
          loss: sample.loss,
          measured_at: sample.measured_at,
          sig_a: toHex(sig_a),
          sig_b: toHex(sig_b),
        }),
      ),
      coordinates: this.#coordinates.list(now).map(([node, { value, at }]) => ({ node_id: node, coordinate: viewOf(value), updated_at: at })),
      mesh: this.stats(),
    };
  }

  /** GET /netgraph/rtt?to=: this node's pings of `to`, or a link sample with it, or else the prediction; undefined when none. */
  rtt(to: Uint8Array): RttAnswer | undefined {
    const now = this.#clock.now();
    const key = toHex(to);
    const mine = this.#figures(to);
    if (mine !== null)
      return {
        to: key,
        rtt_ms: mine.medianMs,
        source: 'measured',
        jitter_ms: mine.jitterMs,
        loss: mine.loss,
        measured_at: now,
        samples: mine.samplesMs.length,
      };
    const link = this.#links.get(linkKey(this.#key.publicKey, to), now)?.value.signed.sample;
    if (link !== undefined)
      return { to: key, rtt_ms: link.rtt_ms, source: 'measured', jitter_ms: link.jitter_ms, loss: link.loss, measured_at: link.measured_at, samples: 0 };
    const theirs = this.#coordinates.get(key, now);
    if (theirs === undefined) return undefined;
    const own = this.vivaldi.coordinate;
    return { to: key, rtt_ms: estimateRttMs(own, theirs.value), source: 'predicted', error: own.error + theirs.value.error, updated_at: theirs.at };
  }

  /** The mesh in three figures (stats.ts). */
  stats(): MeshStats {
    const now = this.#clock.now();
    const held = this.#links.list(now).map(([, { value }]) => value);
    const links = held.map((link) => link.signed.sample);
    const coordinates = new Map(this.#coordinates.list(now).map(([node, { value }]) => [node, value]));
    coordinates.set(this.#self, this.vivaldi.coordinate);
    const peers = this.#network.peers().map((p) => p.node);
    const reachable = new Set(peers.map(toHex));
    const fresh = now - 2 * this.#sampleEveryMs();
    for (const s of links) {
      if (s.measured_at < fresh) continue;
      if (bytesEqual(s.a, this.#key.publicKey)) reachable.add(toHex(s.b));
      if (bytesEqual(s.b, this.#key.publicKey)) reachable.add(toHex(s.a));
    }
    const known = new Set([...this.#knownNodes(), ...coordinates.keys(), ...links.flatMap((s) => [toHex(s.a), toHex(s.b)])]);
    // Regions go by the least RTT of each pair lately: its samples' over the book's expiry, and for
    // this node's own links the least round trip of its pings, which need no sample to wait for.
    const leastMeasured = held.map(({ signed: { sample }, least }) => [toHex(sample.a), toHex(sample.b), least.least(now) ?? sample.rtt_ms] as const);
    for (const peer of peers) {
      const { samplesMs } = this.#pings.figures(peer);
      if (samplesMs.length > 0) leastMeasured.push([this.#self, toHex(peer), Math.min(...samplesMs)]);
    }
    return meshStats({
      self: this.#self,
      known,
      reachable,
      measured: links.map((s) => [toHex(s.a), toHex(s.b), s.rtt_ms] as const),
      leastMeasured,
      coordinates,
    });
  }
}
