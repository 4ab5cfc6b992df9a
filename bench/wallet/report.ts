/**
 * The wallet benchmark's report: its goal judged on a run's figures and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import type { BundleSizes, StartRun } from './cases.ts';

export interface WalletReport extends RunInfo {
  readonly node: { readonly version: string };
  readonly chromium: string;
  readonly chain: { readonly blocks: number; readonly txs: number; readonly blockIntervalMs: number };
  readonly page: readonly StartRun[];
  readonly nodeBaseline: readonly StartRun[];
  readonly bundle: BundleSizes | null;
}

/** The goal: a cold page shows a verified balance within this on loopback. */
export const COLD_PAGE_GOAL_MS = 3_000;

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(0)} KiB`;

export function evaluateWalletGoals(report: WalletReport): Goal[] {
  const title = `Chromium: a cold page opened against a devnet of ${report.chain.blocks.toLocaleString('en-US')} blocks shows a verified balance within ${seconds(COLD_PAGE_GOAL_MS)} on loopback (median)`;
  if (report.page.length === 0) return [unmeasured(title)];
  const page = median(report.page.map((r) => r.ms));
  const node = report.nodeBaseline.length > 0 ? median(report.nodeBaseline.map((r) => r.ms)) : null;
  const first = report.page[0]!;
  return [
    {
      title,
      met: page <= COLD_PAGE_GOAL_MS,
      detail:
        `page ${seconds(page)} (from checkpoint ${first.checkpointHeight} to tip ${first.tipHeight})` +
        (node === null ? '' : `; the same light start on Node ${seconds(node)} (${(page / node).toFixed(2)}×)`),
    },
  ];
}

export function renderWalletSection(report: WalletReport, goals: readonly Goal[] = evaluateWalletGoals(report)): string {
  const parts: string[] = ['## Wallet'];
  parts.push(measuredLine(report, `Node ${report.node.version}, ${report.chromium}`, 'runs'));
  parts.push(
    `A \`mesh node --devnet\` serves a generated chain of ${report.chain.blocks.toLocaleString('en-US')} blocks ` +
      `(${report.chain.txs.toLocaleString('en-US')} transactions). **page**: a fresh browser context (no IndexedDB, no cache) opens ` +
      '`/wallet`, imports the backup of an account holding credits, fetches the state at the checkpoint `/wallet/config.json` names, ' +
      "checks it against the block's state_root, syncs to the tip and shows the balance; timed from navigation to the balance at the " +
      'tip. **Node**: the same light start (core/node/light-start.ts, then sync) in a Node process over TCP into a memory store, timed ' +
      'from starting libp2p to the tip. The bundle is built by the node once, before the runs.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  const rows = [
    ...report.page.map((r, i) => [`▸ cold page, run ${i + 1}`, seconds(r.ms), `${r.checkpointHeight} → ${r.tipHeight}`, r.balance]),
    ...report.nodeBaseline.map((r, i) => [`· light start on Node, run ${i + 1}`, seconds(r.ms), `${r.checkpointHeight} → ${r.tipHeight}`, r.balance]),
  ];
  if (rows.length > 0) parts.push(markdownTable(['start', 'time', 'checkpoint → tip', 'balance shown (credits)'], rows, [false, true, false, true]));
  const b = report.bundle;
  if (b) {
    parts.push('### Bundle size');
    parts.push(
      markdownTable(
        ['bundle (esbuild, minified ES module)', 'size', 'gzipped', 'ratio (gzipped)'],
        [
          ['▸ the wallet page (host-browser/wallet/main.ts)', kib(b.walletBytes), kib(b.walletGzipBytes), (b.walletGzipBytes / b.minimalGzipBytes).toFixed(2)],
          ["· libp2p's minimal browser node (WebSockets, WebRTC, relay, noise, yamux, identify)", kib(b.minimalBytes), kib(b.minimalGzipBytes), '1 (ref)'],
        ],
        [false, true, true, true],
      ),
    );
  }
  return parts.join('\n\n');
}

export const WALLET_REPORT: ReportKind<WalletReport> = { name: 'wallet', evaluate: evaluateWalletGoals, render: renderWalletSection };
