/**
 * The wallet benchmark's own machinery: both bundles build with the same options and are measured
 * gzipped, and the goal and the section read the figures right. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bundleSizes } from './cases.ts';
import { evaluateWalletGoals, median, renderWalletSection, type WalletReport } from './report.ts';

test("bundleSizes: the wallet and libp2p's minimal browser node, raw and gzipped", async () => {
  const sizes = await bundleSizes();
  for (const [raw, gzipped] of [
    [sizes.walletBytes, sizes.walletGzipBytes],
    [sizes.minimalBytes, sizes.minimalGzipBytes],
  ] as const) {
    assert.ok(gzipped > 0 && gzipped < raw, `${gzipped} of ${raw}`);
  }
  // The wallet holds libp2p and the core: more than libp2p alone.
  assert.ok(sizes.walletBytes > sizes.minimalBytes);
});

const run = (ms: number) => ({ ms, balance: '2.5', checkpointHeight: 900, tipHeight: 1_000 });
const report = (page: number[], node: number[]): WalletReport => ({
  command: 'npx mesh bench wallet',
  date: '2026-11-24T06:00:00.000Z',
  quick: false,
  machine: { cpu: 'test cpu', cores: 2, os: 'linux' },
  elapsedMs: 1_000,
  node: { version: '24' },
  chromium: 'Chromium 1',
  chain: { blocks: 1_000, txs: 3_000, blockIntervalMs: 1_000 },
  page: page.map(run),
  nodeBaseline: node.map(run),
  bundle: { walletBytes: 4_000, walletGzipBytes: 1_000, minimalBytes: 2_000, minimalGzipBytes: 500 },
});

test('the goal: the median cold page against 3 s, with the Node start beside it; the section shows every run and the bundles', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 2, 3]), 2.5);
  const [met] = evaluateWalletGoals(report([900, 3_500, 1_100], [400, 500, 450]));
  assert.equal(met!.met, true);
  assert.match(met!.detail, /page 1\.10 s .*Node 0\.45 s \(2\.44×\)/);
  assert.equal(evaluateWalletGoals(report([3_100, 3_200, 1_000], []))[0]!.met, false);
  assert.equal(evaluateWalletGoals(report([], []))[0]!.met, null);
  const section = renderWalletSection(report([900], [400]));
  assert.match(section, /▸ cold page, run 1 \| 0\.90 s \| 900 → 1000 \| 2\.5/);
  assert.match(section, /· light start on Node, run 1 \| 0\.40 s/);
  assert.match(section, /the wallet page .* \| 4 KiB \| 1 KiB \| 2\.00/);
});
