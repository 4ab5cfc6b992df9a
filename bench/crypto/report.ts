/**
 * The crypto benchmark's report: the goals judged on a run's figures and the Markdown section of
 * bench/RESULTS.md. Pure functions of the results; lib/results.ts writes the files.
 */
import { measuredLine, type RunInfo } from '../lib/environment.ts';
import { type Goal, goalList, unmeasured } from '../lib/goals.ts';
import type { ReportKind } from '../lib/results.ts';
import { markdownTable } from '../lib/table.ts';
import { formatDuration, formatRate } from '../lib/timing.ts';
import { type CaseResult, formatBytes, type RuntimeName, type RuntimeResult, throughput } from './cases.ts';
import type { OpensslResult } from './openssl.ts';

export interface CryptoReport extends RunInfo {
  readonly runtimes: readonly RuntimeResult[];
  readonly failures: readonly { readonly runtime: RuntimeName; readonly reason: string }[];
  readonly openssl: OpensslResult;
}

const RUNTIME_TITLE: Record<RuntimeName, string> = { node: 'Node', deno: 'Deno', chromium: 'Chromium' };

function blockCase(runtime: RuntimeResult | undefined): CaseResult | undefined {
  return runtime?.cases.find((c) => c.group === 'verify-block');
}

function row(c: CaseResult | undefined, name: string): CaseResult['rows'][number] | undefined {
  return c?.rows.find((r) => r.name === name);
}

function coreBlockRows(runtime: RuntimeResult): {
  cold: CaseResult['rows'][number] | undefined;
  warm: CaseResult['rows'][number] | undefined;
  reference: CaseResult['rows'][number] | undefined;
  backend: string;
} {
  const c = blockCase(runtime);
  const backend = runtime.backends[0] ?? 'webcrypto';
  const cold = row(c, `core verifyBatch (${backend}) cold`) ?? row(c, `core verifyBatch (${backend})`);
  return { cold, warm: row(c, `core verifyBatch (${backend}) warm`), reference: row(c, c?.reference ?? ''), backend };
}

const ms = (ns: number): string => formatDuration(ns);

/** Judges the three crypto goals on a run's figures. */
export function evaluateGoals(report: CryptoReport): Goal[] {
  const byName = new Map(report.runtimes.map((r) => [r.runtime, r]));
  const goals: Goal[] = [];

  // (1) Node: a block through the core no slower than node:crypto over both cores.
  {
    const title = "Node: a block's 1,024 verifications through the core no slower than node:crypto on both cores";
    const node = byName.get('node');
    const rows = node ? coreBlockRows(node) : undefined;
    if (!rows?.cold || !rows.reference) {
      goals.push(unmeasured(title));
    } else {
      const warm = rows.warm ? `; warm cache ${ms(rows.warm.medianNs)} (${rows.warm.ratio.toFixed(2)}×)` : '';
      goals.push({
        title,
        met: rows.cold.ratio <= 1,
        detail:
          `core (${rows.backend}, cold keys) ${ms(rows.cold.medianNs)} vs ${rows.reference.name} ` +
          `${ms(rows.reference.medianNs)}: ${rows.cold.ratio.toFixed(2)}×${warm}`,
      });
    }
  }

  // (2) Deno and Chromium: within 1.25× of the runtime's own WebCrypto.
  {
    const title = "Deno and Chromium: a block through the core within 1.25× of the runtime's own WebCrypto";
    const parts: string[] = [];
    let met: boolean | null = null;
    for (const name of ['deno', 'chromium'] as const) {
      const runtime = byName.get(name);
      const rows = runtime ? coreBlockRows(runtime) : undefined;
      if (!rows?.cold || !rows.reference) {
        parts.push(`${RUNTIME_TITLE[name]} not measured`);
        continue;
      }
      const ok = rows.cold.ratio <= 1.25;
      met = (met ?? true) && ok;
      const warm = rows.warm ? `, warm ${ms(rows.warm.medianNs)} (${rows.warm.ratio.toFixed(2)}×)` : '';
      parts.push(
        `${RUNTIME_TITLE[name]} cold ${ms(rows.cold.medianNs)} vs ${ms(rows.reference.medianNs)} ` +
          `(${rows.cold.ratio.toFixed(2)}×${ok ? '' : ', over'})${warm}`,
      );
    }
    goals.push({ title, met, detail: parts.join('; ') });
  }

  // (3) Node: SHA-256 of 32 B at least as fast as hash(), of 1 MiB within 1.5×.
  {
    const title =
      "Node: SHA-256 through the core (as the Node host runs it) at 32 B at least as fast as node:crypto's " +
      'one-shot hash(), and at 1 MiB within 1.5× of it';
    const node = byName.get('node');
    const pick = (bytes: number): { c: CaseResult; r: CaseResult['rows'][number] } | undefined => {
      const cases = node?.cases.filter((c) => c.group === 'sha256' && c.bytes === bytes) ?? [];
      // The figure that counts is the core as the Node host runs it: through nodeSha256().
      const c = cases.at(-1);
      const r = c?.rows.find((x) => x.role === 'core' && /^core sha256( |$)/.test(x.name));
      return c && r ? { c, r } : undefined;
    };
    const small = pick(32);
    const large = pick(1048576);
    if (!small || !large) {
      goals.push(unmeasured(title));
    } else {
      const describe = (label: string, p: { c: CaseResult; r: CaseResult['rows'][number] }): string => {
        const reference = row(p.c, p.c.reference);
        // Other native rows (node:crypto's hex-string output) are shown, though not the same work.
        const others = p.c.rows
          .filter((x) => x.role === 'baseline' && x.name !== p.c.reference && x.name.startsWith('node:crypto'))
          .map((x) => `; against ${x.name} (${ms(x.medianNs)}) ${(p.r.medianNs / x.medianNs).toFixed(2)}×`)
          .join('');
        return `${label}: ${p.r.name} ${ms(p.r.medianNs)} vs ${p.c.reference} ${ms(reference?.medianNs ?? NaN)} ` + `(${p.r.ratio.toFixed(2)}×)${others}`;
      };
      goals.push({
        title,
        met: small.r.ratio <= 1 && large.r.ratio <= 1.5,
        detail: `${describe('32 B', small)}. ${describe('1 MiB', large)}`,
      });
    }
  }
  return goals;
}

function runtimeTable(runtime: RuntimeResult): string {
  const rows: string[][] = [];
  for (const c of runtime.cases) {
    if (c.group === 'sha256-sweep') continue;
    c.rows.forEach((r, i) => {
      rows.push([
        i === 0 ? `**${c.title}**<br>ratio vs ${c.reference}` : '',
        `${r.role === 'core' ? '▸' : '·'} ${r.name}`,
        formatDuration(r.medianNs),
        formatRate(r.opsPerSec),
        throughput(r, c.unit),
        r.name === c.reference ? '1 (ref)' : r.ratio.toFixed(2),
        r.note ?? '',
      ]);
    });
  }
  return markdownTable(['case', 'implementation', 'median', 'ops/s', 'throughput', 'ratio', 'note'], rows, [false, false, true, true, true, true, false]);
}

/** What the core adds to the same work on a block: cold against raw WebCrypto, warm against pre-imported keys. */
export function blockOverhead(runtime: RuntimeResult): string | null {
  const c = blockCase(runtime);
  const backend = runtime.backends[0] ?? 'webcrypto';
  const pairs: [string, string, string][] = [
    [`core verifyBatch (${backend}) cold`, 'WebCrypto import+verify, concurrent', 'cold'],
    [`core verifyBatch (${backend}) warm`, 'WebCrypto verify, keys pre-imported', 'warm'],
  ];
  const parts: string[] = [];
  for (const [core, raw, label] of pairs) {
    const a = row(c, core);
    const b = row(c, raw);
    if (!a || !b) continue;
    const delta = a.medianNs - b.medianNs;
    parts.push(
      `${label} ${delta >= 0 ? '+' : '−'}${formatDuration(Math.abs(delta))} against ${raw} ` +
        `(${(a.medianNs / b.medianNs).toFixed(2)}×, ${delta >= 0 ? '+' : '−'}${formatDuration(Math.abs(delta) / 1024)} per signature)`,
    );
  }
  return parts.length > 0 ? `What the core adds to the same WebCrypto work on a block: ${parts.join('; ')}.` : null;
}

function sweepTable(runtime: RuntimeResult): string {
  const sweep = runtime.cases.filter((c) => c.group === 'sha256-sweep');
  if (sweep.length === 0) return '';
  const names = sweep[0]!.rows.map((r) => r.name);
  const table = markdownTable(
    ['size', ...names],
    sweep.map((c) => [formatBytes(c.bytes ?? 0), ...c.rows.map((r) => formatDuration(r.medianNs))]),
    [false, ...names.map(() => true)],
  );
  const lines = runtime.crossovers.map((x) => `- ${x.agrees ? '' : x.actual ? '**Disagrees:** ' : '*What-if:* '}${x.remark}`);
  return `SHA-256 crossover sweep (median time per hash):\n\n${table}\n\n${lines.join('\n')}`;
}

function opensslSection(openssl: OpensslResult): string {
  if (!openssl.ok) return `### OpenSSL speed\n\nSkipped: ${openssl.reason}.`;
  const rows: string[][] = openssl.sha256.map((s) => [
    `sha256, ${formatBytes(s.bytes)}`,
    `${(s.bytesPerSec / 1e6).toFixed(0)} MB/s`,
    formatDuration(s.nsPerOp),
    '',
  ]);
  if (openssl.ed25519) {
    const e = openssl.ed25519;
    rows.push(['ed25519 sign, 1 core', `${formatRate(e.signPerSec)} /s`, formatDuration(1e9 / e.signPerSec), '']);
    rows.push([
      'ed25519 verify, 1 core',
      `${formatRate(e.verifyPerSec)} /s`,
      formatDuration(1e9 / e.verifyPerSec),
      formatDuration((1024 * 1e9) / e.verifyPerSec),
    ]);
  }
  if (openssl.ed25519AllCores) {
    const e = openssl.ed25519AllCores;
    rows.push([
      `ed25519 verify, ${e.cores} cores (-multi)`,
      `${formatRate(e.verifyPerSec)} /s`,
      formatDuration(1e9 / e.verifyPerSec),
      formatDuration((1024 * 1e9) / e.verifyPerSec),
    ]);
  }
  const table = markdownTable(['measurement', 'rate', 'per op', '1,024 verifies'], rows, [false, true, true, true]);
  const notes = openssl.notes.map((n) => `\n- ${n}`).join('');
  const multi = openssl.ed25519AllCores ? `, and \`openssl speed -seconds 2 -multi ${openssl.ed25519AllCores.cores} ed25519\` for all cores at once` : '';
  return (
    `### OpenSSL speed\n\n\`${openssl.version}\`: \`openssl speed -seconds 1 -bytes N -evp sha256\` and ` +
    `\`openssl speed -seconds 1 ed25519\`, the native limit of one core${multi}. (Node links its own OpenSSL, ` +
    `so its figures may differ.)\n\n${table}${notes}`
  );
}

function versions(report: CryptoReport): string {
  return report.runtimes
    .map((r) => {
      if (r.runtime === 'node') return `Node ${r.version} (V8 ${r.details.v8}, OpenSSL ${r.details.openssl})`;
      if (r.runtime === 'deno') return `Deno ${r.version} (V8 ${r.details.v8})`;
      return `Chromium ${r.details.browser ?? r.version}`;
    })
    .join(', ');
}

/** The body of the crypto section (without markers). */
export function renderCryptoSection(report: CryptoReport, goals: readonly Goal[] = evaluateGoals(report)): string {
  const parts: string[] = [];
  parts.push('## Crypto');
  parts.push(measuredLine(report, versions(report)));
  parts.push(
    'Each figure is the median of repeated samples (each sample at least 20 ms of back-to-back calls, ' +
      'after a warm-up; 9 samples, 21 for the blocks and 3 for noble blocks); the contenders of one case are sampled in ' +
      'interleaved rounds. **ratio** = median time ÷ median time of the baseline named in the case, ' +
      "the runtime's native implementation, measured in the same rounds: below 1 is faster. " +
      "▸ goes through the core's API, · is a baseline. *cold*: every sample verifies a block of " +
      '1,024 keys the core has never seen, so its key cache cannot help; *warm*: the same block again.',
  );
  parts.push('### Goals');
  parts.push(goalList(goals));
  for (const runtime of report.runtimes) {
    const elapsed = (runtime.elapsedMs / 1000).toFixed(0);
    parts.push(`### ${RUNTIME_TITLE[runtime.runtime]} ${runtime.version}`);
    parts.push(`Ed25519 backends: ${runtime.backends.join(', ')} (the first is the default); ${elapsed} s.`);
    parts.push(runtimeTable(runtime));
    const overhead = blockOverhead(runtime);
    if (overhead) parts.push(overhead);
    const sweep = sweepTable(runtime);
    if (sweep) parts.push(sweep);
    if (runtime.notes.length > 0) parts.push(runtime.notes.map((n) => `- Note: ${n}.`).join('\n'));
  }
  for (const failure of report.failures) {
    parts.push(`### ${RUNTIME_TITLE[failure.runtime]}\n\nNot measured: ${failure.reason}`);
  }
  parts.push(opensslSection(report.openssl));
  return parts.join('\n\n');
}

export const CRYPTO_REPORT: ReportKind<CryptoReport> = { name: 'crypto', evaluate: evaluateGoals, render: renderCryptoSection };
