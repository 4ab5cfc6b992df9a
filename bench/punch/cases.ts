/**
 * The hole-punching benchmark's measurements, in the NAT lab (test/nat-lab.ts): a relay with a
 * STUN responder on the public segment, A and B behind the two cone NATs, C behind the symmetric
 * one, each a peer process (peer.ts) with a reservation on the relay.
 *
 * - Punching: A hangs up on B, dials B through the relay (`…/p2p-circuit/p2p/<B>`), and waits
 *   for the network to upgrade the relayed connection to a direct WebRTC one; an attempt succeeds
 *   when A's peer list shows B direct within PUNCH_WAIT_MS.
 * - Throughput: the same bytes from A through a bare libp2p stream and through a raw stream of
 *   the network port, on the direct connection A–B and on the relayed connection A–C (a fresh
 *   circuit for each exchange: a relay allows a relayed connection 16 MiB, RelayLimits).
 */
import { fileURLToPath } from 'node:url';
import { UPGRADE_MS } from '../../core/net/direct-upgrade.ts';
import { createNatLab, type LabHost, type NatLab } from '../../test/nat-lab.ts';
import { type Peer, startPeerProcess } from '../lib/peer-process.ts';
import type { Via } from '../tunnel/peer.ts';
import type { Path, PunchPeerConfig } from './peer.ts';

const PEER_SCRIPT = fileURLToPath(new URL('./peer.ts', import.meta.url));
const P2P_PORT = 4001;
export const STUN_PORT = 3478;
/** How long an attempt waits for the direct connection. */
export const PUNCH_WAIT_MS = 15_000;
export const VIAS: readonly Via[] = ['libp2p', 'port'];

export interface Attempt {
  readonly ok: boolean;
  /** From the dial through the relay to the direct connection (or to giving up). */
  readonly ms: number;
  /** Why it stayed relayed, as A's log said. */
  readonly reason?: string;
  /** Dials through the relay that failed, or whose connection was dropped before its upgrade, before the one that went through (not counted as failures). */
  readonly relayRetries: number;
}

export interface Sample {
  readonly path: Path;
  readonly via: Via;
  readonly bytes: number;
  readonly ms: number;
}

export interface PunchSetup {
  readonly lab: NatLab;
  readonly relay: Peer;
  readonly a: Peer;
  readonly b: Peer;
  readonly c: Peer;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it gives a value, or null after `timeoutMs`. */
async function until<T>(check: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T | null> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const value = await check();
    if (value !== null && value !== undefined && value !== false) return value;
    await sleep(20);
  }
  return null;
}

function startIn(host: LabHost, config: PunchPeerConfig): Promise<Peer> {
  return startPeerProcess({ script: PEER_SCRIPT, args: [JSON.stringify(config)], wrap: ['ip', 'netns', 'exec', host.netns] });
}

/** Builds the lab and starts the four peers; A, B and C hold their reservations when it resolves. */
export async function startSetup(): Promise<PunchSetup> {
  const lab = await createNatLab();
  try {
    const pub = lab.public[0]!;
    const relay = await startIn(pub, { listenHost: pub.address, port: P2P_PORT, bootstrap: [], stun: [], stunPort: STUN_PORT });
    const natted = (host: LabHost): Promise<Peer> =>
      startIn(host, { listenHost: host.address, port: P2P_PORT, bootstrap: [relay.addr], stun: [`stun:${pub.address}:${STUN_PORT}`], stunPort: null });
    const [a, b, c] = await Promise.all(lab.natted.slice(0, 3).map(natted));
    for (const peer of [a!, b!, c!]) {
      const reserved = await until(async () => (await peer.call<string[]>('addresses')).some((addr) => addr.includes('/p2p-circuit/webrtc')), 15_000);
      if (reserved === null) throw new Error(`no relay reservation in 15 s:\n${peer.log()}`);
    }
    return { lab, relay, a: a!, b: b!, c: c! };
  } catch (error) {
    await lab.close();
    throw error;
  }
}

export async function stopSetup(setup: PunchSetup): Promise<void> {
  await Promise.all([setup.a, setup.b, setup.c, setup.relay].map((peer) => peer.stop()));
  await setup.lab.close();
}

/** `to`'s address through the relay. */
const circuitOf = (setup: PunchSetup, to: Peer): string => `${setup.relay.addr}/p2p-circuit/p2p/${to.addr.split('/p2p/')[1]!}`;

interface PeerState {
  readonly relayed: boolean;
  readonly remoteAddr: string;
}

/** Hangs up both ends and waits until neither lists the other. */
async function apart(from: Peer, to: Peer): Promise<void> {
  // Both: a failed upgrade may leave the answerer a WebRTC connection of its own (DirectUpgrades.opened).
  await Promise.all([from.call('hangup', { node: to.nodeId }), to.call('hangup', { node: from.nodeId })]);
  const gone = await until(
    async () => (await from.call('state', { node: to.nodeId })) === null && (await to.call('state', { node: from.nodeId })) === null,
    UPGRADE_MS + 5_000,
  );
  if (gone === null) {
    const states = [await from.call('state', { node: to.nodeId }), await to.call('state', { node: from.nodeId })];
    throw new Error(`the two peers did not hang up in ${(UPGRADE_MS + 5_000) / 1000} s: ${JSON.stringify(states)}`);
  }
}

/** Dials through the relay that many times at most before an attempt counts as failed. */
const MEET_TRIES = 3;

/**
 * Meets `to` through the relay; resolves to the failed dials before the one that went through (an
 * attempt every 150 ms or so exceeds libp2p's 5 new connections a second from one address, and
 * the peer sees every circuit come from the relay's). Throws after MEET_TRIES.
 */
async function meet(setup: PunchSetup, from: Peer, to: Peer): Promise<number> {
  for (let failed = 0; ; failed++) {
    try {
      await from.call('connect', { node: to.nodeId, hint: circuitOf(setup, to) });
      return failed;
    } catch (error) {
      if (failed + 1 >= MEET_TRIES) throw error;
      await sleep(200);
    }
  }
}

/** One punching attempt from A to B. */
export async function punchOnce(setup: PunchSetup): Promise<Attempt> {
  const { a, b } = setup;
  await apart(a, b);
  const logged = a.log().length;
  const started = performance.now();
  let relayRetries: number;
  try {
    relayRetries = await meet(setup, a, b);
  } catch (error) {
    return { ok: false, ms: performance.now() - started, reason: `the relay did not connect them: ${(error as Error).message}`, relayRetries: MEET_TRIES };
  }
  const direct = await until(async () => {
    const state = await a.call<PeerState | null>('state', { node: b.nodeId });
    // The relayed connection gone before any upgrade: B's libp2p dropped it (see meet); meet again.
    if (state === null) relayRetries += 1 + (await meet(setup, a, b).catch(() => MEET_TRIES));
    return state !== null && !state.relayed;
  }, PUNCH_WAIT_MS);
  const ms = performance.now() - started;
  if (direct !== null) return { ok: true, ms, relayRetries };
  const reason = /stays relayed: (.*)/.exec(a.log().slice(logged))?.[1] ?? `no direct connection in ${PUNCH_WAIT_MS} ms`;
  return { ok: false, ms, reason, relayRetries };
}

export async function punchAttempts(setup: PunchSetup, count: number, log: (line: string) => void): Promise<Attempt[]> {
  const attempts: Attempt[] = [];
  for (let i = 0; i < count; i++) {
    const attempt = await punchOnce(setup);
    attempts.push(attempt);
    const retried = attempt.relayRetries > 0 ? `, after ${attempt.relayRetries} failed dial(s) through the relay` : '';
    log(`  attempt ${i + 1}: ${attempt.ok ? 'direct' : 'relayed'} in ${attempt.ms.toFixed(0)} ms${attempt.reason ? ` (${attempt.reason})` : ''}${retried}`);
  }
  return attempts;
}

/** Rounds of the same bytes through each way of sending, on the direct path A–B and the relayed path A–C. */
export async function measureThroughput(setup: PunchSetup, runs: number, bytes: number, log: (line: string) => void): Promise<Sample[]> {
  const { a, b, c } = setup;
  const samples: Sample[] = [];
  const direct = await until(async () => {
    const state = await a.call<PeerState | null>('state', { node: b.nodeId });
    if (state === null) await meet(setup, a, b);
    return state !== null && !state.relayed;
  }, PUNCH_WAIT_MS);
  if (direct === null) throw new Error('A and B have no direct connection to measure');
  // A warm-up exchange each, then the rounds.
  for (let round = 0; round <= runs; round++) {
    for (const via of VIAS) {
      const sample = await a.call<{ bytes: number; ms: number }>('exchange', { node: b.nodeId, bytes, via, path: 'direct' });
      if (round > 0) samples.push({ path: 'direct', via, ...sample });
    }
    for (const via of VIAS) {
      await apart(a, c);
      await meet(setup, a, c);
      const sample = await a.call<{ bytes: number; ms: number }>('exchange', { node: c.nodeId, bytes, via, path: 'relayed' });
      if (round > 0) samples.push({ path: 'relayed', via, ...sample });
    }
    if (round > 0)
      log(
        `  round ${round}: ${samples
          .slice(-4)
          .map((s) => `${s.path}/${s.via} ${(s.bytes / 1024 / 1024 / (s.ms / 1000)).toFixed(2)} MB/s`)
          .join(', ')}`,
      );
  }
  return samples;
}

/** MB/s (MiB) of a sample. */
export const mbps = (sample: Sample): number => sample.bytes / (1024 * 1024) / (sample.ms / 1000);
