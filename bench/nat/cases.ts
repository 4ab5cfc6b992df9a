/**
 * The NAT benchmark's measurements, on real `mesh node` processes in the NAT lab (test/nat-lab.ts):
 * how long after joining every pair of nodes reaches each other by NodeId, and what the first
 * message to a node never met costs (lookup, dial through the relay, deliver) next to the second.
 */
import { getJson, type MeshProcess, postJson, stopNode } from '../../test/mesh-process.ts';
import type { NatLab } from '../../test/nat-lab.ts';

/** How long a pair may take to reach each other before the run calls it unreached. */
export const REACH_TIMEOUT_MS = 30_000;
const POLL_MS = 200;

/** One ordered pair's time from the later of the two joins to its first delivered message; null: never within REACH_TIMEOUT_MS. */
export interface PairReach {
  readonly from: string;
  readonly to: string;
  readonly ms: number | null;
  /** Why the last try failed, for a pair never reached. */
  readonly error?: string;
}

export interface ReachRound {
  readonly nodes: number;
  readonly pairs: readonly PairReach[];
}

export interface FirstMessageRound {
  /** Each unordered pair's first message (one way), in ms. */
  readonly firstMs: readonly number[];
  /** The second message of the same pair, same way: the connection is open. */
  readonly secondMs: readonly number[];
}

interface Joined {
  readonly name: string;
  readonly node: MeshProcess;
  /** performance.now() when it had printed its addresses. */
  readonly joinedAt: number;
}

/** Sends one message; null when it was delivered, else why not. */
const send = async (from: MeshProcess, to: MeshProcess, text: string): Promise<string | null> => {
  const answer = await postJson(from, '/mesh/send', { to: to.nodeId, topic: 'bench', payload_hex: Buffer.from(text).toString('hex') }).catch(
    (error: unknown) => ({ status: 0, body: String(error) }),
  );
  return answer.status === 200 ? null : `${answer.status} ${JSON.stringify(answer.body)}`;
};

/** Starts a node on every NATed host of the lab, all at once, bootstrapped to `relay`. */
async function joinAll(lab: NatLab, relay: MeshProcess): Promise<Joined[]> {
  const join = { bootstrap: [lab.tcpAddress(relay)] };
  return Promise.all(
    lab.natted.map(async (host) => {
      const node = await lab.startNode(host, join);
      return { name: host.name, node, joinedAt: performance.now() };
    }),
  );
}

/**
 * Starts the NATed nodes at once and sends, for every ordered pair of them and the relay, a
 * message every POLL_MS until one is delivered: the time from the later join to that delivery.
 * Stops the NATed nodes after.
 */
export async function measureReach(lab: NatLab, relay: MeshProcess): Promise<ReachRound> {
  const relayJoined: Joined = { name: 'relay', node: relay, joinedAt: 0 };
  const hosts = await joinAll(lab, relay);
  try {
    const everyone = [relayJoined, ...hosts];
    const pairs = everyone.flatMap((from) => everyone.filter((to) => to !== from).map((to) => ({ from, to })));
    const reached = await Promise.all(
      pairs.map(async ({ from, to }): Promise<PairReach> => {
        const since = Math.max(from.joinedAt, to.joinedAt);
        for (;;) {
          const error = await send(from.node, to.node, `reach ${from.name} to ${to.name}`);
          if (error === null) return { from: from.name, to: to.name, ms: performance.now() - since };
          if (performance.now() - since > REACH_TIMEOUT_MS) return { from: from.name, to: to.name, ms: null, error };
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
      }),
    );
    return { nodes: everyone.length, pairs: reached };
  } finally {
    await Promise.all(hosts.map((h) => stopNode(h.node)));
  }
}

/**
 * Starts the NATed nodes, waits until each holds a relay reservation, then, one pair at a time,
 * times the first message between two nodes that never met and the second on the same way.
 */
export async function measureFirstMessages(lab: NatLab, relay: MeshProcess): Promise<FirstMessageRound> {
  const hosts = await joinAll(lab, relay);
  try {
    const deadline = performance.now() + REACH_TIMEOUT_MS;
    for (const { node } of hosts) {
      for (;;) {
        const status = await getJson<{ relay_addresses: string[] }>(node, '/status');
        if (status.relay_addresses.length > 0) break;
        if (performance.now() > deadline) throw new Error(`${node.nodeId} holds no relay reservation after ${REACH_TIMEOUT_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }
    const firstMs: number[] = [];
    const secondMs: number[] = [];
    for (const [i, from] of hosts.entries()) {
      for (const to of hosts.slice(i + 1)) {
        for (const into of [firstMs, secondMs]) {
          const started = performance.now();
          const error = await send(from.node, to.node, `first ${from.name} to ${to.name}`);
          if (error !== null) throw new Error(`${from.name} could not message ${to.name}: ${error}`);
          into.push(performance.now() - started);
        }
      }
    }
    return { firstMs, secondMs };
  } finally {
    await Promise.all(hosts.map((h) => stopNode(h.node)));
  }
}
