/**
 * A hostile peer against a real devnet: three `mesh node` processes on loopback, mining, and a
 * foreign peer built from the project's own libp2p that runs the attack sequence of
 * test/hostile-peer.ts on one of them (docs/network.md, "Limits on one peer"). Afterwards the
 * honest nodes agree on one tip within 30 s, the target's memory stayed bounded and its /health
 * answered throughout.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ATTACK, attack, highest, oneTip, rssBytes, watch } from './hostile-peer.ts';
import { startNode, stopAll, stopNode, tcpAddress } from './mesh-process.ts';

after(stopAll);

const MiB = 1024 * 1024;
// What the attack may add to the target's resident memory at its peak: every buffer it can make
// the node hold is bounded (gossip frames 2.5 MiB, requests 1 MiB each, 256 streams a connection).
const MAX_RSS_GROWTH_BYTES = 256 * MiB;

test('a stranger with a fresh identity per phase cannot silence a node: the devnet is on one tip within 30 s', async (t) => {
  const options = { mine: true, blockIntervalMs: 300 };
  const target = await startNode(options);
  const b = await startNode({ ...options, bootstrap: [tcpAddress(target)] });
  const c = await startNode({ ...options, bootstrap: [tcpAddress(target), tcpAddress(b)] });
  const honest = [target, b, c];
  try {
    await oneTip(honest, 5, 60_000);
    const baseline = await rssBytes(target);
    const watching = watch(target);
    const report = await attack(target, ATTACK);
    const seen = watching.stop();
    const ended = Date.now();
    // The target's own blocks must reach the others again: a tip above every height at the end.
    const tip = await oneTip(honest, (await highest(honest)) + 3, 30_000);
    t.diagnostic(`one tip at ${tip.height} ${Date.now() - ended} ms after the attack`);
    t.diagnostic(`phases: ${report.phases.map((p) => `${p.name} ${p.ms} ms${p.connected ? '' : ' (refused)'}`).join('; ')}`);
    t.diagnostic(`rss ${Math.round(baseline / MiB)} MiB before, peak ${Math.round(seen.peakRssBytes / MiB)} MiB; ${seen.healthChecks} health checks`);
    assert.deepEqual(seen.healthFailures, [], '/health answered throughout');
    assert.ok(seen.peakRssBytes - baseline < MAX_RSS_GROWTH_BYTES, `rss grew ${Math.round((seen.peakRssBytes - baseline) / MiB)} MiB`);
    assert.match(target.log(), /oversized-frame/, 'the 3 MiB frame is refused by name');
    assert.match(target.log(), /invalid-message/, 'junk costs its sender');
  } finally {
    await Promise.all(honest.map((n) => stopNode(n)));
  }
});
