/**
 * The ledger benchmark's report: the two goals judged on a run's figures and the Markdown section
 * of bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */

import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { formatDuration } from '../lib/timing.ts';
import {
  APPLY_BLOCK,
  type BlockCase,
  DECODE_APPLY,
  formatMemory,
  GOAL_SAMPLES,
  PHASE_SAMPLES,
  percent,
  ROOT_CHANGES,
  type RootCase,
  SIGNATURES,
} from './cases.ts';

export interface LedgerReport extends RunInfo {
  readonly node: { readonly version: string; readonly v8: string; readonly openssl: string };
  /** The block case with the host's native SHA-256 first, then any other hasher. */
  readonly blocks: readonly BlockCase[];
  readonly roots: readonly RootCase[];
}

/** The block goal's bounds: applyBlock at most this many times the signature checks alone… */
export const BLOCK_RATIO_GOAL = 1.25;
/** …and with the block's decoding at most this many times. */
export const BLOCK_DECODE_RATIO_GOAL = 1.35;
/**
 * The state-root goal's test: with 100 times the accounts, the same k changed entries must cost
 * less than this many times as much. A cost that followed the state's size would be 100 times;
 * one that followed the trie's depth (log₂ of the size) 1.5 times, plus what a larger working set
 * costs in cache misses.
 */
export const ROOT_GROWTH_LIMIT = 10;

/** From this share of the CPU taken by other processes on, a block figure is flagged as disturbed. */
export const BUSY_SHARE = 0.05;

const times = (x: number): string => `${x.toFixed(2)}×`;

/** The root cases at the smallest and the largest size measured, if they are 100× apart. */
function rootSpan(roots: readonly RootCase[]): { small: RootCase; large: RootCase } | null {
  const small = roots.find((r) => r.size === 10_000);
  const large = roots.find((r) => r.size === 1_000_000);
  return small && large ? { small, large } : null;
}

/** Judges the two ledger goals on a run's figures. */
export function evaluateLedgerGoals(report: LedgerReport): Goal[] {
  const goals: Goal[] = [];
  {
    const title =
      `Node: validating and applying a full block of 1,024 mixed transactions (applyBlock: signatures, rules, ` +
      `state root) in at most ${BLOCK_RATIO_GOAL}× the time of its signature checks alone, and with its decoding ` +
      `in at most ${BLOCK_DECODE_RATIO_GOAL}×`;
    const main = report.blocks[0];
    const row = (c: BlockCase, name: string): BlockCase['rows'][number] | undefined => c.rows.find((r) => r.name === name);
    if (!main) {
      goals.push(unmeasured(title));
    } else {
      const others = report.blocks
        .slice(1)
        .map((c) => `; with the ${c.sha256} crypto ${times(c.ratio)}`)
        .join('');
      goals.push({
        title,
        met: main.ratio <= BLOCK_RATIO_GOAL && main.ratioWithDecode <= BLOCK_DECODE_RATIO_GOAL,
        detail:
          `${APPLY_BLOCK} ${formatDuration(row(main, APPLY_BLOCK)!.medianNs)} vs ${SIGNATURES} ` +
          `${formatDuration(row(main, SIGNATURES)!.medianNs)} (${main.signatures.toLocaleString('en-US')} signatures, ` +
          `${main.sha256} crypto): ` +
          `${times(main.ratio)} (median of the per-round ratios ${times(main.pairedRatio)}); ` +
          `with the block's decoding ${times(main.ratioWithDecode)}${others}` +
          (main.othersCpu !== null && main.othersCpu >= BUSY_SHARE
            ? `; other processes took ${percent(main.othersCpu)} of the CPU meanwhile, so this reads low`
            : ''),
      });
    }
  }
  {
    const title =
      'Node: the cost of updating state_root grows with the changed entries (times log of the state size), ' +
      `not with the state size: at 10⁶ accounts less than ${ROOT_GROWTH_LIMIT}× the cost at 10⁴ for every k`;
    const span = rootSpan(report.roots);
    if (!span) {
      goals.push(unmeasured(title, 'not measured at both 10⁴ and 10⁶ accounts in this run'));
    } else {
      const growth = span.small.points.map((p, i) => ({ k: p.changed, x: span.large.points[i]!.medianNs / p.medianNs }));
      goals.push({
        title,
        met: growth.every((g) => g.x < ROOT_GROWTH_LIMIT),
        detail: `100× the accounts cost ${growth.map((g) => `${times(g.x)} at k = ${g.k.toLocaleString('en-US')}`).join(', ')}`,
      });
    }
  }
  return goals;
}

function blockSection(blocks: readonly BlockCase[]): string {
  const main = blocks[0]!;
  const kinds = Object.entries(main.kinds)
    .sort((a, b) => b[1]! - a[1]!)
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ');
  const intro =
    `The block: ${main.txs.toLocaleString('en-US')} valid transactions of all sixteen kinds (${kinds}), ` +
    `${main.signatures.toLocaleString('en-US')} signatures to check (the header's, every sender's, the payers' ` +
    `co-signatures on settlements and channel closes, both headers of each equivocation), ` +
    `${(main.blockBytes / 1000).toFixed(0)} kB on the wire, applied to a state of ${main.stateEntries.toLocaleString('en-US')} ` +
    `entries (10,000 accounts, 2,000 of them funded participants with open bids, channels and bonds); it changes ` +
    `${main.changedEntries.toLocaleString('en-US')} entries` +
    (main.stateRootHashes === null ? '.' : `, and its state root takes ${main.stateRootHashes.toLocaleString('en-US')} SHA-256 computations.`);
  const header = ['measurement'];
  for (const c of blocks) header.push(`${c.sha256} crypto`, 'ratio');
  header.push('note');
  const rows = main.rows.map((r) => {
    const cells = [r.phase && r.name !== SIGNATURES ? `  phase: ${r.name}` : `**${r.name}**`];
    for (const c of blocks) {
      const same = c.rows.find((x) => x.name === r.name);
      if (!same) cells.push('–', '–');
      else cells.push(formatDuration(same.medianNs), same.name === SIGNATURES ? '1 (ref)' : same.ratio.toFixed(2));
    }
    cells.push(r.note ?? '');
    return cells;
  });
  const right = header.map((_, i) => i > 0 && i < header.length - 1);
  const phases = main.rows.filter((r) => r.phase && r.name !== SIGNATURES && r.name !== 'decodeBlock');
  const signatures = main.rows.find((r) => r.name === SIGNATURES)!;
  const apply = main.rows.find((r) => r.name === APPLY_BLOCK)!;
  const sum = signatures.medianNs + phases.reduce((t, r) => t + r.medianNs, 0);
  const load = blocks.filter((c) => c.othersCpu !== null).map((c) => `${percent(c.othersCpu!)} while the ${c.sha256} crypto was measured`);
  const rest =
    `The phases of applyBlock, each timed alone, add up to ${formatDuration(sum)} with the signatures ` +
    `against ${formatDuration(apply.medianNs)} for the whole; ${DECODE_APPLY} is what a node does with a block ` +
    'from the network. ' +
    (load.length > 0
      ? `Other processes took ${load.join(' and ')} of the machine's CPU time: the signature checks use both ` +
        'cores and the rest of a block one, so other work slows the first more and makes the ratio read low.'
      : '');
  return `### A full block\n\n${intro}\n\n${markdownTable(header, rows, right)}\n\n${rest}`;
}

function rootSection(roots: readonly RootCase[]): string {
  const header = ['accounts', 'build', 'first root', 'memory', ...ROOT_CHANGES.map((k) => `k = ${k.toLocaleString('en-US')}`)];
  const rows = roots.map((c) => [
    c.size.toLocaleString('en-US'),
    formatDuration(c.buildMs * 1e6),
    formatDuration(c.firstRootMs * 1e6),
    c.memoryBytes === null ? '–' : formatMemory(c.memoryBytes, c.size),
    ...c.points.map(
      (p) =>
        `${formatDuration(p.medianNs)}<br>${formatDuration(p.perEntryNs)}/entry` +
        `${p.hashesPerEntry === null ? '' : `<br>${p.hashesPerEntry.toFixed(1)} hashes/entry`}`,
    ),
  ]);
  const table = markdownTable(
    header,
    rows,
    header.map((_, i) => i > 0),
  );
  const base = roots[0];
  const growth = base
    ? roots.slice(1).map((c) => {
        const parts = c.points.map((p, i) => {
          const b = base.points[i]!;
          const hashes = p.hashesPerEntry !== null && b.hashesPerEntry !== null ? `, hashes/entry ${times(p.hashesPerEntry / b.hashesPerEntry)}` : '';
          return `k = ${p.changed.toLocaleString('en-US')}: time ${times(p.medianNs / b.medianNs)}${hashes}`;
        });
        const depth = Math.log2(c.size) / Math.log2(base.size);
        return `- ${(c.size / base.size).toLocaleString('en-US')}× the accounts (log₂ ${times(depth)}): ${parts.join('; ')}.`;
      })
    : [];
  return (
    '### State root against state size\n\n' +
    'A state of plain accounts, entered as from storage (**build**), its first root over every entry (**first root**), ' +
    'the heap and buffers it then holds (**memory**), and the median time of `stateRoot()` after k accounts ' +
    'picked at random were rewritten (fresh ones for every sample; the writes are not timed). A changed entry costs ' +
    'two hashes (key and value) and the rehash of the trie nodes above it, which changed entries share near the root.\n\n' +
    `${table}\n\n${growth.join('\n')}`
  );
}

/** The body of the ledger section (without markers). */
export function renderLedgerSection(report: LedgerReport, goals: readonly Goal[] = evaluateLedgerGoals(report)): string {
  const parts: string[] = ['## Ledger'];
  parts.push(measuredLine(report, `Node ${report.node.version} (V8 ${report.node.v8}, OpenSSL ${report.node.openssl})`));
  parts.push(
    "On Node only: the ledger is the same code on every runtime, and the figure that matters is a host's. " +
      '"native" is the crypto the Node host installs (`host-node/native-crypto.ts`, as `mesh node` runs): SHA-256 by ' +
      'node:crypto, and a batch of Ed25519 signatures checked by node:crypto on worker threads, one per core; "wasm" is ' +
      "the core's own: its WebAssembly SHA-256, and Ed25519 through WebCrypto. Both sides of a ratio use the same " +
      "Ed25519 backend, with the block's keys already in its key cache. Each figure is the median of repeated samples " +
      `taken in interleaved rounds: ${GOAL_SAMPLES} of the signature checks alone, applyBlock and applyBlock with decoding, ` +
      `side by side; then ${PHASE_SAMPLES} of each phase, in rounds of their own, so that the garbage their setups leave is not collected ` +
      "inside the goal's samples. **ratio** = median ÷ the median of the signature checks alone.",
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  if (report.blocks.length > 0) parts.push(blockSection(report.blocks));
  if (report.roots.length > 0) parts.push(rootSection(report.roots));
  return parts.join('\n\n');
}

export const LEDGER_REPORT: ReportKind<LedgerReport> = { name: 'ledger', evaluate: evaluateLedgerGoals, render: renderLedgerSection };
