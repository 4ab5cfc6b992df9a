/**
 * The channels benchmark's report: its goals judged on a run's figures and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable, textTable } from '../lib/table.ts';
import { formatDuration } from '../lib/timing.ts';
import { type ChannelsCase, CONCURRENT, HOST_ACCEPT, HOST_ACCEPT_MANY, PAYER_SIGN, RAW_SIGN, RAW_VERIFY, type Row, rowOf, UNSYNCED } from './cases.ts';

export interface ChannelsReport extends RunInfo {
  readonly node: { readonly version: string; readonly v8: string; readonly openssl: string };
  readonly channels: ChannelsCase | null;
  /** The share of the machine's CPU time other processes took while it was measured, if known. */
  readonly othersCpu?: number | null;
}

/** The payer's goal: signing receipts at no less than this share of raw signing's rate. */
export const SHARE_GOAL = 0.5;

const percent = (share: number): string => `${(share * 100).toFixed(0)} %`;
const rate = (r: Row): string => `${Math.round(r.opsPerSec).toLocaleString('en-US')}/s`;

function shareGoal(report: ChannelsReport, title: string, path: string, raw: string): Goal {
  const c = report.channels;
  const mine = c && rowOf(c.rows, path);
  const base = c && rowOf(c.rows, raw);
  if (!mine || !base) return unmeasured(title);
  return {
    title,
    met: mine.share >= SHARE_GOAL,
    detail: `${rate(mine)} (${formatDuration(mine.medianNs)} a receipt) against ${rate(base)} (${formatDuration(base.medianNs)}): ${percent(mine.share)}`,
  };
}

/** The second goal's bound: synced writes of the host's store per receipt, 64 channels at once. */
export const WRITES_PER_RECEIPT_GOAL = 0.1;

/** Judges the two channel goals on a run's figures. */
export function evaluateChannelsGoals(report: ChannelsReport): Goal[] {
  const c = report.channels;
  const writesTitle =
    `the host's receipts share its synced writes: with ${CONCURRENT} channels paying at once, at most one write of its LevelDB ` +
    `per ${Math.round(1 / WRITES_PER_RECEIPT_GOAL)} receipts (each receipt is still written before it is acknowledged)`;
  const host = c && rowOf(c.rows, HOST_ACCEPT_MANY);
  return [
    shareGoal(
      report,
      `one payer node signs receipts (the route's core path) at ${percent(SHARE_GOAL)} or more of the rate of raw Ed25519 signing`,
      PAYER_SIGN,
      RAW_SIGN,
    ),
    !c || c.writesPerReceipt === null || !host
      ? unmeasured(writesTitle)
      : {
          title: writesTitle,
          met: c.writesPerReceipt <= WRITES_PER_RECEIPT_GOAL,
          detail: `${c.writesPerReceipt.toFixed(3)} writes per receipt (one per ${(1 / c.writesPerReceipt).toFixed(0)} receipts); the host took ${rate(host)}`,
        },
  ];
}

/** The rows as a text table for the terminal. */
export function formatRows(rows: readonly Row[]): string {
  const cells = rows.map((r) => [r.name, formatDuration(r.medianNs), rate(r), r.versus === null ? 'ref' : percent(r.share)]);
  return textTable([['measurement', 'per receipt', 'rate', 'of its ref'], ...cells], [false, true, true, true]).replace(/^/gm, '  ');
}

function tableSection(c: ChannelsCase): string {
  const rows = c.rows.map((r) => [
    r.versus === null ? `**${r.name}**` : `  ${r.name}`,
    formatDuration(r.medianNs),
    rate(r),
    r.versus === null ? '1 (ref)' : percent(r.share),
    r.note ?? '',
  ]);
  const table = markdownTable(['measurement', 'per receipt', 'receipts/s', 'of the ref above', 'note'], rows, [false, true, true, true, false]);
  const host = rowOf(c.rows, HOST_ACCEPT);
  const unsynced = rowOf(c.rows, HOST_ACCEPT + UNSYNCED);
  const verify = rowOf(c.rows, RAW_VERIFY);
  const write = c.rows.find((r) => r.name.startsWith('LevelDB'));
  const oneAtATime =
    host && unsynced && verify && write
      ? `One receipt at a time, the host takes ${formatDuration(host.medianNs)} a receipt: the signature check (${formatDuration(verify.medianNs)}) ` +
        `and a synced LevelDB write (${formatDuration(write.medianNs)} alone), since a receipt is acknowledged only once it is on disk; ` +
        `with a store that is not synced, ${formatDuration(unsynced.medianNs)}. The synced write is the disk's time, and on this machine it varies ` +
        'from run to run far more than the signatures do. ' +
        `With ${CONCURRENT} channels at once, the receipts that arrive while one batch is written go into the next` +
        (c.writesPerReceipt === null ? '.' : `: ${c.writesPerReceipt.toFixed(3)} writes per receipt in this run.`)
      : '';
  return `${table}\n\n${oneAtATime}`;
}

/** The body of the channels section (without markers). */
export function renderChannelsSection(report: ChannelsReport, goals: readonly Goal[] = evaluateChannelsGoals(report)): string {
  const parts: string[] = ['## Payment channels'];
  parts.push(measuredLine(report, `Node ${report.node.version} (V8 ${report.node.v8}, OpenSSL ${report.node.openssl})`));
  const c = report.channels;
  parts.push(
    'Receipts per second on the core path the routes use (not HTTP, not the delivery over the network): three MeshNodes over ' +
      'the memory network, a payer and a host, each with its channel book in a LevelDB opened as `mesh node` opens it (synced ' +
      'at every batch), and a second host whose store is not synced, to show what the fsync costs; the payer opened channels ' +
      'to both hosts. The payer signs receipts of one channel one ' +
      'after another (`ChannelPayer.sign`: the checks, the signature, the highest receipt recorded); the host takes them ' +
      '(`ChannelHost.accept`: the channel on the chain, the signature against its payer, the best receipt written before it ' +
      'answers), one channel at a time and ' +
      `${CONCURRENT} at once. Next to them, in the same interleaved rounds, Ed25519 alone through the core's backend (WebCrypto, ` +
      'what the node signs and verifies with) and through node:crypto for scale. Each figure is the median per receipt of ' +
      (c ? `${c.samples} samples of ${c.opsPerSample} receipts (${8 * CONCURRENT} for the cases ${CONCURRENT} at once)` : 'the samples') +
      ', after a warm-up sample.',
  );
  if (report.othersCpu != null) {
    parts.push(
      `Other processes took ${percent(report.othersCpu)} of the machine's CPU time while this was measured: the rounds interleave every ` +
        'measurement, so a busy patch slows all of them alike and the shares stay honest, but the rates read low.',
    );
  }
  parts.push('### Goals');
  parts.push(goalList(goals));
  if (c) parts.push(tableSection(c));
  return parts.join('\n\n');
}

export const CHANNELS_REPORT: ReportKind<ChannelsReport> = { name: 'channels', evaluate: evaluateChannelsGoals, render: renderChannelsSection };
