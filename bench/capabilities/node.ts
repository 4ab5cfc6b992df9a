/**
 * `mesh bench capabilities`, on Node: a five-link token checked as a host checks it, next to its
 * five Ed25519 verifications alone, with the crypto a node's placement host uses (the core's own);
 * writes bench/results/capabilities.json and the capabilities section of bench/RESULTS.md.
 */
import { command } from '../../host-node/cli/command.ts';
import { describeMachine, sourceState } from '../lib/environment.ts';
import { printLine, publishReport, type ResultPaths, type RunOptions } from '../lib/results.ts';
import { commandLine, runFlags, runOptions } from '../lib/run-options.ts';
import { measureCapabilities } from './cases.ts';
import { CAPABILITIES_REPORT, type CapabilitiesReport } from './report.ts';

/** Runs `mesh bench capabilities`; resolves to the exit code. */
export async function runCapabilitiesBench(options: RunOptions & { readonly paths?: ResultPaths }): Promise<number> {
  const log = printLine;
  const started = Date.now();
  const source = await sourceState();
  log('mesh bench capabilities: Node only (the check is the same code on every runtime; a host is what runs it)\n');
  const result = await measureCapabilities({ quick: options.quick, log });
  const report: CapabilitiesReport = {
    command: options.command,
    date: new Date().toISOString(),
    quick: options.quick,
    machine: await describeMachine(),
    node: { version: process.versions.node, v8: process.versions.v8, openssl: process.versions.openssl },
    result,
    ...(source ? { source } : {}),
    elapsedMs: Date.now() - started,
  };
  await publishReport(CAPABILITIES_REPORT, report, { write: options.write, log, ...(options.paths && { paths: options.paths }) });
  return 0;
}

export const capabilitiesBenchCommand = command({
  description: 'A host checking a five-link capability token, warm and with keys never seen, next to its five Ed25519 verifications alone (Node only).',
  options: runOptions,
  run: (input) => runCapabilitiesBench({ ...runFlags(input.options), command: commandLine(input) }),
});
