/**
 * The startup benchmark's machinery: whole commands timed in interleaved rounds against the
 * baseline, and the goals and the section read the figures right. No speed is asserted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeCommands, timeOnce } from './cases.ts';
import { evaluateStartupGoals, renderStartupSection, type StartupReport } from './report.ts';

const node = process.execPath;

test('timeCommands: every case timed after a warm-up, each ratio against the baseline; a failing command rejects', async () => {
  const timings = await timeCommands(
    [
      { name: 'node -e 0', role: 'baseline', file: node, args: ['-e', '0'] },
      { name: 'a 150 ms wait', role: 'command', file: node, args: ['-e', 'setTimeout(() => {}, 150)'] },
    ],
    2,
  );
  assert.deepEqual(
    timings.map((t) => [t.name, t.runsMs.length]),
    [
      ['node -e 0', 2],
      ['a 150 ms wait', 2],
    ],
  );
  assert.equal(timings[0]!.ratio, 1);
  assert.ok(timings[1]!.medianMs >= 150 && timings[1]!.ratio > 1, `${timings[1]!.medianMs} ms`);
  await assert.rejects(timeOnce({ name: 'exit 3', role: 'command', file: node, args: ['-e', 'process.exit(3)'] }), /exit 3 exited with 3/);
});

const timing = (name: string, role: 'command' | 'baseline', medianMs: number) => ({
  name,
  role,
  runsMs: [medianMs - 5, medianMs, medianMs + 9],
  medianMs,
  ratio: medianMs / 40,
});
const report = (helpMs: number, statusMs: number | null): StartupReport => ({
  command: 'npx mesh bench startup',
  date: '2026-12-05T23:00:00.000Z',
  quick: false,
  machine: { cpu: 'test cpu', cores: 2, os: 'linux' },
  elapsedMs: 9_000,
  node: { version: '24.21.0' },
  runs: 3,
  timings: [
    timing('node -e 0', 'baseline', 40),
    timing('mesh --help', 'command', helpMs),
    ...(statusMs === null ? [] : [timing('mesh status', 'command', statusMs)]),
  ],
  coldHelpMs: 120,
});

test('the goals: mesh --help within 300 ms and mesh status within 500 ms; the section shows each command beside the baseline', () => {
  const [help, status] = evaluateStartupGoals(report(60, 180));
  assert.deepEqual([help!.met, status!.met], [true, true]);
  assert.equal(help!.detail, '60 ms, 1.50× a bare `node -e 0` (40 ms) in the same rounds');
  assert.deepEqual(
    evaluateStartupGoals(report(301, 501)).map((g) => g.met),
    [false, false],
  );
  assert.equal(evaluateStartupGoals(report(60, null))[1]!.met, null);
  const section = renderStartupSection(report(60, 180));
  assert.match(section, /^## Command-line startup/);
  assert.match(section, /\| · `node -e 0` \| 40 ms \| 35–49 ms \| 1 \(ref\) \|/);
  assert.match(section, /\| ▸ `mesh status` \| 180 ms \| 175–189 ms \| 4\.50 \|/);
  assert.match(section, /first `mesh --help`, .* took 120 ms/);
});
