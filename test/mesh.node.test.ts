/**
 * A real mesh on loopback: `mesh node --devnet` processes with a short block interval, joined
 * through libp2p, driven and observed through their HTTP APIs.
 */

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CREDIT } from '../core/encoding/amount.ts';
import { getJson, type MeshProcess, openStream, postJson, startNode, stopAll, stopNode, tcpAddress, waitFor } from './mesh-process.ts';

after(stopAll);

interface Beacon {
  height: number;
  hash: string;
}
interface Status {
  node_id: string;
  height: number;
  balance: string;
}

const beacon = (n: MeshProcess): Promise<Beacon> => getJson<Beacon>(n, '/beacon');

/** Resolves once every node reports the same tip at the same moment (they keep mining). */
async function converged(nodes: MeshProcess[], minHeight: number, timeoutMs = 60_000): Promise<Beacon> {
  return waitFor(
    `${nodes.length} nodes on one tip at height ≥ ${minHeight}`,
    async () => {
      const tips = await Promise.all(nodes.map(beacon));
      const first = tips[0]!;
      return first.height >= minHeight && tips.every((t) => t.hash === first.hash) ? first : undefined;
    },
    timeoutMs,
    20,
  );
}

test('three mining nodes bootstrap from one another and converge on one tip', async () => {
  const a = await startNode({ mine: true, blockIntervalMs: 300 });
  const b = await startNode({ mine: true, blockIntervalMs: 300, bootstrap: [tcpAddress(a)] });
  const c = await startNode({ mine: true, blockIntervalMs: 300, bootstrap: [tcpAddress(a), tcpAddress(b)] });
  try {
    const tip = await converged([a, b, c], 10);
    assert.ok(tip.height >= 10);
    // Each node's libp2p peer id is its NodeId: the bootstrap list names it.
    const { peers } = await getJson<{ peers: string[] }>(a, '/bootstrap');
    assert.ok(
      peers.some((p) => p === tcpAddress(a)),
      'own address first',
    );
    assert.ok(
      peers.some((p) => p.endsWith(tcpAddress(b).split('/p2p/')[1]!)),
      'a connected peer',
    );
    // The capacity broadcasts make an atlas of all three, with self-tags since they all mine.
    const atlas = await waitFor('an atlas of three', async () => {
      const entries = await getJson<{ node_id: string; cpu_cores: number; tags: string[] }[]>(a, '/atlas');
      return entries.length === 3 ? entries : undefined;
    });
    assert.deepEqual(atlas.map((e) => e.node_id).sort(), [a.nodeId, b.nodeId, c.nodeId].sort());
    for (const entry of atlas) {
      assert.ok(entry.cpu_cores >= 1);
      assert.ok(entry.tags.includes('linux') && !entry.tags.some((t) => t.startsWith('tag:')), entry.tags.join());
    }
  } finally {
    await Promise.all([a, b, c].map((n) => stopNode(n)));
  }
});

test('a transfer posted to one node streams on another, and once mined shows on every node', async () => {
  const a = await startNode({ mine: true, blockIntervalMs: 300 });
  const b = await startNode({ bootstrap: [tcpAddress(a)], blockIntervalMs: 300 });
  const c = await startNode({ bootstrap: [tcpAddress(a)], blockIntervalMs: 300 });
  try {
    await converged([a, b, c], 3);
    const stream = await openStream<{ id: string; origin: string; kind: string; amount: string }>(b, '/transactions/stream');
    const amount = (12n * CREDIT).toString();
    const sent = await postJson(a, '/transfer', { to: c.nodeId, amount });
    assert.equal(sent.status, 201, JSON.stringify(sent.body));
    const event = await stream.next((e) => e.id === sent.body.tx_id);
    assert.deepEqual(event, { id: sent.body.tx_id, origin: a.nodeId, kind: 'Transfer', amount });
    stream.close();
    // Confirmed: c's balance is the transfer (c does not mine), and every node lists it.
    await waitFor('c credited', async () => (await getJson<Status>(c, '/status')).balance === amount);
    for (const n of [a, b, c]) {
      const list = await waitFor('listed', async () => {
        const rows = await getJson<{ tx_id: string; direction: string; amount: string }[]>(n, `/transactions/${c.nodeId}`);
        return rows.find((r) => r.tx_id === sent.body.tx_id);
      });
      assert.equal(list.direction, 'in');
      assert.equal(list.amount, amount);
    }
    // Self-tags are advertised only while a node mines: A's entry carries them, B's and C's none.
    const atlas = await waitFor('an atlas of three', async () => {
      const entries = await getJson<{ node_id: string; tags: string[] }[]>(a, '/atlas');
      return entries.length === 3 ? entries : undefined;
    });
    for (const entry of atlas) {
      const mines = entry.node_id === a.nodeId;
      assert.equal(entry.tags.includes('linux'), mines, `${mines ? 'the miner' : 'a node that does not mine'}: ${entry.tags.join()}`);
    }
  } finally {
    await Promise.all([a, b, c].map((n) => stopNode(n)));
  }
});

test('a node stopped for many blocks rejoins and catches up by sync', async () => {
  const a = await startNode({ mine: true, blockIntervalMs: 100 });
  let b = await startNode({ bootstrap: [tcpAddress(a)], blockIntervalMs: 100 });
  try {
    await converged([a, b], 3);
    const stoppedAt = (await beacon(b)).height;
    assert.equal(await stopNode(b), 0, 'SIGTERM stops cleanly');
    await waitFor('a mines on', async () => (await beacon(a)).height >= stoppedAt + 60);
    b = await startNode({ dataDir: b.dataDir, bootstrap: [tcpAddress(a)], blockIntervalMs: 100 });
    const tip = await converged([a, b], stoppedAt + 60);
    assert.ok(tip.height >= stoppedAt + 60);
  } finally {
    await Promise.all([a, b].map((n) => stopNode(n)));
  }
});

test('a node killed with SIGKILL while mining restarts with its chain intact', async () => {
  let a = await startNode({ mine: true, blockIntervalMs: 50 });
  try {
    for (let round = 0; round < 3; round++) {
      const before = await waitFor('a few blocks', async () => {
        const t = await beacon(a);
        return t.height >= 5 * (round + 1) ? t : undefined;
      });
      // Kill at an arbitrary moment within the next block interval.
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 50)));
      assert.equal(await stopNode(a, 'SIGKILL'), null);
      a = await startNode({ dataDir: a.dataDir, mine: true, blockIntervalMs: 50 });
      const after = await beacon(a);
      assert.ok(after.height >= before.height, `height ${after.height} after restart, ${before.height} confirmed before the kill`);
      const status = await getJson<Status>(a, '/status');
      assert.ok(BigInt(status.balance) >= BigInt(before.height) * 1_000n * CREDIT, 'every confirmed reward is still there');
    }
    assert.equal(await stopNode(a, 'SIGINT'), 0, 'SIGINT stops cleanly');
  } finally {
    await stopNode(a);
  }
});
