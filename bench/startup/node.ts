/**
 * `mesh bench startup`: how soon the `mesh` command on the PATH answers `--version`, `--help` and
 * `status` (against a devnet node it starts), next to a bare start of the same Node; writes
 * bench/results/startup.json and the startup section of bench/RESULTS.md.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command, type OptionValues, option } from '../../host-node/cli/command.ts';
import { integer } from '../../host-node/cli/values.ts';
import { startNode, stopAll } from '../../test/mesh-process.ts';
import { describeMachine, REPO_ROOT, sourceState } from '../lib/environment.ts';
import { printLine, publishReport } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { type CommandCase, timeCommands, timeOnce } from './cases.ts';
import { HELP, STARTUP_REPORT, STATUS, type StartupReport } from './report.ts';

const startupOptions = {
  ...runOptions,
  runs: option({ value: 'N', description: 'counted runs of each command', parse: integer(1, 100), shown: '20; 3 with --quick' }),
};

/** The Node bin/mesh runs: the one npm ci installed, as bin/mesh picks it. */
function meshNode(): string {
  const own = join(REPO_ROOT, 'node_modules/node/bin/node');
  return existsSync(own) ? own : process.execPath;
}

async function runStartupBench(values: OptionValues<typeof startupOptions>, commandText: string): Promise<number> {
  const log = printLine;
  const started = performance.now();
  const { quick, write } = runFlags(values);
  const runs = values.runs ?? (quick ? 3 : 20);
  // What npm link makes: a link to bin/mesh in a folder on the PATH; and a compile cache of its own,
  // so that the first run is as cold as a fresh install's.
  const scratch = await mkdtemp(join(tmpdir(), 'mesh-bench-startup-'));
  const mesh = join(scratch, 'mesh');
  await symlink(join(REPO_ROOT, 'bin/mesh'), mesh);
  const env = { NODE_COMPILE_CACHE: join(scratch, 'compile-cache') };
  const node = meshNode();
  let report: StartupReport;
  try {
    const coldHelpMs = await timeOnce({ name: HELP, role: 'command', file: mesh, args: ['--help'], env });
    log(`mesh bench startup: ${mesh} → bin/mesh, ${runs} runs each; the first ${HELP} (cold) ${coldHelpMs.toFixed(0)} ms`);
    const devnet = await startNode({ dataDir: join(scratch, 'node') });
    const cases: CommandCase[] = [
      { name: 'node -e 0', role: 'baseline', file: node, args: ['-e', '0'] },
      { name: 'mesh --version', role: 'command', file: mesh, args: ['--version'], env },
      { name: HELP, role: 'command', file: mesh, args: ['--help'], env },
      { name: STATUS, role: 'command', file: mesh, args: ['status', '--data-dir', devnet.dataDir], env },
      // What the compile cache saves: the same command with it off.
      {
        name: `${STATUS}, no compile cache`,
        role: 'command',
        file: mesh,
        args: ['status', '--data-dir', devnet.dataDir],
        env: { NODE_DISABLE_COMPILE_CACHE: '1' },
      },
    ];
    const timings = await timeCommands(cases, runs, log);
    const source = await sourceState();
    report = {
      command: commandText,
      date: new Date().toISOString(),
      quick,
      machine: await describeMachine(),
      node: { version: process.versions.node },
      runs,
      timings,
      coldHelpMs,
      ...(source ? { source } : {}),
      elapsedMs: performance.now() - started,
    };
  } finally {
    await stopAll();
    await rm(scratch, { recursive: true, force: true });
  }
  await publishReport(STARTUP_REPORT, report, { write, log });
  return 0;
}

/** `mesh bench startup`. */
export const startupBenchCommand = command({
  description: `The mesh command as npm link puts it on the PATH: mesh --version, mesh --help and mesh status
(against a devnet node it starts) from spawn to exit, next to a bare node -e 0 of the same Node.`,
  options: startupOptions,
  run: (input) => runStartupBench(input.options, commandLine(input)),
});
