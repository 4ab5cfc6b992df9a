/**
 * The capabilities benchmark's report: its goal judged on a run's figures and the Markdown section
 * of bench/RESULTS.md. Pure functions of the results; node.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { formatDuration } from '../lib/timing.ts';
import { type CapabilityCase, CHECK_WARM, DECODE_CHECK_COLD, DECODE_CHECK_WARM, VERIFY_COLD, VERIFY_WARM } from './cases.ts';

export interface CapabilitiesReport extends RunInfo {
  readonly node: { readonly version: string; readonly v8: string; readonly openssl: string };
  readonly result: CapabilityCase | null;
}

/** The goal: a five-link token checked in less than this. */
export const CHECK_GOAL_NS = 1e6;

const row = (c: CapabilityCase, name: string): CapabilityCase['rows'][number] | undefined => c.rows.find((r) => r.name === name);

/** Judges the goal on a run's figures. */
export function evaluateCapabilitiesGoals(report: CapabilitiesReport): Goal[] {
  const title =
    `Node: a host checks a five-link capability token (every rule, five signatures, a revocation look-up per link) in less than ` +
    `${formatDuration(CHECK_GOAL_NS)}, its keys already imported (a delegate seen before)`;
  const c = report.result;
  const check = c && row(c, CHECK_WARM);
  const verify = c && row(c, VERIFY_WARM);
  if (!c || !check || !verify) return [unmeasured(title)];
  const decoded = row(c, DECODE_CHECK_WARM);
  const cold = row(c, DECODE_CHECK_COLD);
  const coldVerify = row(c, VERIFY_COLD);
  return [
    {
      title,
      met: check.medianNs < CHECK_GOAL_NS,
      detail:
        `${CHECK_WARM} ${formatDuration(check.medianNs)} against ${formatDuration(verify.medianNs)} for the five verifications alone ` +
        `(${check.ratio.toFixed(2)}×)` +
        (decoded ? `; from the token's text ${formatDuration(decoded.medianNs)}` : '') +
        (cold && coldVerify
          ? `; with keys the host has never seen (not the goal's case: the verifications alone take most of it) ` +
            `${formatDuration(cold.medianNs)} from the text against ${formatDuration(coldVerify.medianNs)} (${cold.ratio.toFixed(2)}×)`
          : ''),
    },
  ];
}

/** The body of the capabilities section (without markers). */
export function renderCapabilitiesSection(report: CapabilitiesReport, goals: readonly Goal[] = evaluateCapabilitiesGoals(report)): string {
  const parts: string[] = ['## Capabilities'];
  parts.push(measuredLine(report, `Node ${report.node.version} (V8 ${report.node.v8}, OpenSSL ${report.node.openssl})`));
  parts.push(
    "On Node, with the host's native SHA-256 installed as `mesh node` runs. A token of five links (host → four delegates → the holder), " +
      'each bounding every field a little more than its parent, checked as a host checks a deploy: its root, alignment, the five ' +
      'signatures in one batch, narrowing, window, presenter, a revocation look-up per link in a ledger state holding the ' +
      'revocations below, and the use. **warm**: the same token every time, its keys already imported by the Ed25519 backend on both ' +
      'sides; **cold**: for every sample a token of keys never seen before (made untimed), as a host meets a new delegate. Each figure ' +
      'is the median of repeated samples taken in interleaved rounds; **ratio** = median ÷ the five verifications alone of the same temperature.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  const c = report.result;
  if (c) {
    parts.push(
      `The token: ${c.links} links, ${c.tokenBytes} bytes, ${c.textChars} characters as text; ${c.revocations.toLocaleString('en-US')} revocations on chain.`,
    );
    const rows = c.rows.map((r) => [
      r.role === 'baseline' ? `· ${r.name}` : `▸ ${r.name}`,
      formatDuration(r.medianNs),
      r.role === 'baseline' ? '1 (ref)' : r.ratio.toFixed(2),
      r.note ?? '',
    ]);
    parts.push(markdownTable(['measurement', 'median', 'ratio', 'note'], rows, [false, true, true, false]));
  }
  return parts.join('\n\n');
}

export const CAPABILITIES_REPORT: ReportKind<CapabilitiesReport> = {
  name: 'capabilities',
  evaluate: evaluateCapabilitiesGoals,
  render: renderCapabilitiesSection,
};
