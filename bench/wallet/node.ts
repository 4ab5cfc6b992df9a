/**
 * `mesh bench wallet`: a cold wallet page against a devnet of generated blocks, next to the same
 * light start on Node, and the page's bundle size next to libp2p's minimal browser node. Writes
 * bench/results/wallet.json and the wallet section of bench/RESULTS.md.
 */
import { tmpdir } from 'node:os';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { integer } from '../../host-node/cli/values.ts';
import { nodeCrypto } from '../../host-node/native-crypto.ts';
import { launchChromium } from '../../test/browser-page.ts';
import { getJson, stopAll, stopNode } from '../../test/mesh-process.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { startServingNode } from '../mesh/cases.ts';
import { benchKey, sourceChain } from '../mesh/chain.ts';
import { bundleSizes, coldPage, nodeLightStart, type StartRun } from './cases.ts';
import { WALLET_REPORT, type WalletReport } from './report.ts';

const walletOptions = {
  ...runOptions,
  blocks: option({ value: 'N', description: 'blocks in the generated chain', parse: integer(200, 1_000_000), shown: '10000; 1000 with --quick' }),
  runs: option({ value: 'N', description: 'cold starts, page and Node each', parse: integer(1, 50), shown: '3; 1 with --quick' }),
  'cache-dir': option({ value: 'DIR', description: 'where generated chains are kept between runs', default: tmpdir(), shown: 'the temp directory' }),
};

// The mesh benchmark's chain (bench/mesh/chain.ts): a few accounts trading every block.
const TRANSFERS_PER_BLOCK = 2;
const BLOCK_INTERVAL_MS = 1_000;

async function runWalletBench(values: OptionValues<typeof walletOptions>, commandText: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  const { quick, write } = runFlags(values);
  const blocks = values.blocks ?? (quick ? 1_000 : 10_000);
  const runs = values.runs ?? (quick ? 1 : 3);
  const chain = await sourceChain(
    { blocks, transfersPerBlock: TRANSFERS_PER_BLOCK, blockIntervalMs: BLOCK_INTERVAL_MS, cacheDir: values['cache-dir'] },
    log,
    await nodeCrypto(),
  );
  // An account of the generated chain: the page imports its backup and shows its balance.
  const account = benchKey('account-1');
  const browser = await launchChromium();
  const chromium = `Chromium ${browser.version()}`;
  const page: StartRun[] = [];
  const nodeBaseline: StartRun[] = [];
  let bundle: WalletReport['bundle'] = null;
  try {
    const host = await startServingNode(chain, { log });
    try {
      // The node builds the page's bundle on the first request; a user's cold page finds it built.
      await fetch(`${host.url}/wallet/app.js`).then((r) => r.arrayBuffer());
      const tip = await getJson<{ height: number; hash: string }>(host, '/beacon');
      for (let run = 1; run <= runs; run++) {
        const p = await coldPage(browser, host, account, tip.height);
        page.push(p);
        const n = await nodeLightStart(host, chain.params, account, tip.hash);
        nodeBaseline.push(n);
        log(
          `  run ${run}: cold page ${(p.ms / 1000).toFixed(2)} s (balance ${p.balance}), Node ${(n.ms / 1000).toFixed(2)} s (balance ${n.balance}); checkpoint ${p.checkpointHeight} → tip ${p.tipHeight}`,
        );
        if (p.balance !== n.balance) throw new Error(`the page shows ${p.balance} credits, the Node light start ${n.balance}`);
      }
    } finally {
      await stopNode(host);
    }
    bundle = await bundleSizes();
    log(`  bundle: wallet ${bundle.walletGzipBytes} B gzipped, libp2p minimal ${bundle.minimalGzipBytes} B gzipped`);
  } finally {
    await browser.close();
    await stopAll();
  }
  const source = await sourceState();
  const report: WalletReport = {
    command: commandText,
    date: new Date().toISOString(),
    quick,
    machine: await describeMachine(),
    node: { version: process.versions.node },
    chromium,
    chain: { blocks: chain.info.blocks, txs: chain.info.txs, blockIntervalMs: chain.info.blockIntervalMs },
    page,
    nodeBaseline,
    bundle,
    ...(source ? { source } : {}),
    elapsedMs: performance.now() - started,
  };
  await publishReport(WALLET_REPORT, report, { write, log });
  return 0;
}

/** `mesh bench wallet`. */
export const walletBenchCommand = command({
  description: `A cold wallet page in headless Chromium against a mesh node serving a generated devnet chain:
time to a verified balance at the tip, next to the same light start on Node; the page's bundle,
gzipped, next to libp2p's minimal browser node bundled the same way.`,
  options: walletOptions,
  run: (input) => runWalletBench(input.options, commandLine(input)),
});
